// SOCK_SEQPACKET Unix sockets: the transport between udiagd and its clients.
// Messages keep their boundaries, may carry file descriptors (SCM_RIGHTS),
// and the kernel tells each side who the peer is (SO_PEERCRED/SO_PEERGROUPS).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/error_or.h"
#include "base/scoped_fd.h"

namespace udiag::base {

// Largest message either side sends; bigger payloads are streamed in chunks.
inline constexpr size_t kMaxMessageBytes = 64 * 1024;
// Most descriptors one message carries.
inline constexpr size_t kMaxMessageFds = 4;

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups, from SO_PEERGROUPS
};

// Binds and listens at `path` (an existing stale socket file is replaced).
ErrorOr<ScopedFd> ListenSeqpacket(const std::string& path, int backlog = 64);
// With `timeout_ms`, the connect (when the listener's backlog is full) and
// every later blocking send and receive on the socket give up after that
// long: connect with ETIMEDOUT, sends and receives with EAGAIN.
ErrorOr<ScopedFd> ConnectSeqpacket(const std::string& path, uint32_t timeout_ms = 0);
ErrorOr<ScopedFd> AcceptSeqpacket(int listen_fd);
// A connected pair, both ends close-on-exec unless `cloexec` is false for the first.
int SeqpacketPair(ScopedFd* first, ScopedFd* second, bool first_cloexec = true);

ErrorOr<PeerCredentials> GetPeerCredentials(int fd);

// Sends one message with `fds` attached. Returns 0 or errno (EPIPE when the
// peer is gone; never raises SIGPIPE). `dontwait` makes it return EAGAIN
// instead of blocking when the socket's buffer is full.
int SendMessage(int fd, std::span<const uint8_t> data, std::span<const int> fds = {}, bool dontwait = false);

// Receives one message into `data` (resized to the message) and the fds that
// came with it. Returns 0, ECONNRESET at end of stream, EMSGSIZE if the message
// or its fds were truncated (the fds received are closed), or errno.
// `dontwait` makes it return EAGAIN instead of blocking.
int ReceiveMessage(int fd, std::vector<uint8_t>* data, std::vector<ScopedFd>* fds, bool dontwait = false);

}  // namespace udiag::base
