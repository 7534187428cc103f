// The daemon's end of one binary record stream (ipc/record_stream_format.h):
// consumes an instance's buffer as a trace_pipe reader does, and writes the
// entries to a non-blocking SOCK_STREAM socket in large batches, each event
// type and task first. Entries are copied as the buffer stores them; nothing
// is allocated or written per record.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/scoped_fd.h"
#include "ipc/record_stream_format.h"
#include "service/event_registry.h"
#include "service/instance.h"

namespace udiag::service {

class RecordStreamSender {
 public:
  // The thread name for a task frame ("" when unknown).
  using CommLookup = std::function<std::string(uint32_t tid)>;

  RecordStreamSender(base::ScopedFd socket, Instance* instance, const EventRegistry* registry, CommLookup comm);

  int fd() const { return socket_.get(); }
  Instance* instance() const { return instance_; }

  // Moves what the instance's buffer holds into the socket. Returns 0 when
  // everything went out, EAGAIN when the socket is full (call again once it is
  // writable; the rest waits in the instance buffer, where losses are
  // counted), or the errno of a broken stream.
  int Pump();
  // The event with this id is gone; if the id is reused, its type is sent again.
  void ForgetType(uint32_t id);

 private:
  // Writes `out_`; 0 once it is all gone.
  int Flush();
  // Appends frames for the buffer's next entries; false when it had none.
  bool Fill();
  void AppendFrame(ipc::FrameKind kind, std::span<const uint8_t> body);
  void AppendEventType(const Event& event);
  void AppendTask(uint32_t pid, uint32_t tid);
  void AppendLost(uint64_t count);
  bool TypeSent(uint32_t id) const;

  base::ScopedFd socket_;
  Instance* instance_;
  const EventRegistry* registry_;
  CommLookup comm_;
  std::vector<uint8_t> out_;  // frames not yet written, from out_sent_
  size_t out_sent_ = 0;
  std::vector<bool> type_sent_;  // by id - kFirstId
  std::unordered_set<uint32_t> tasks_sent_;
  uint32_t last_tid_ = UINT32_MAX;  // the last task looked up (most runs are one thread's)
};

}  // namespace udiag::service
