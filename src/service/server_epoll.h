// What the Server's files share about its epoll set and its messages; not
// part of the service's interface.
#pragma once

#include <sys/epoll.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "base/unix_socket.h"
#include "ipc/protocol.h"

namespace udiag::service {

// Dispatch tags for epoll: the low bits say which kind of fd it is.
enum Tag : uint64_t { kListener = 1, kWake, kSignals, kConnection, kDataFile, kRecordStream };
inline uint64_t Pack(Tag tag, uint64_t value) { return value << 8 | tag; }

inline int AddToEpoll(int epoll, int fd, uint32_t events, uint64_t data) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = data;
  return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &ev) < 0 ? errno : 0;
}

// The text one kData message carries: a message, less its header and room.
inline constexpr size_t kChunkBytes = base::kMaxMessageBytes - sizeof(ipc::MessageHeader) - 64;

}  // namespace udiag::service
