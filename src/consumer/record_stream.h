// The client side of an instance's binary record stream: what `udiag record`
// reads. The daemon consumes the instance's buffer into the stream (as
// trace_pipe does, in binary: ipc/record_stream_format.h); this decodes it
// into the recording model (record/trace_model.h) in large batches.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/error_or.h"
#include "base/scoped_fd.h"
#include "consumer/consumer_client.h"
#include "record/trace_model.h"

namespace udiag::consumer {

// Receives a record stream in order. Types and tasks always come before the first record that uses them.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void OnEventType(const record::EventType& type) = 0;
  virtual void OnTask(const record::Task& task) = 0;
  virtual void OnRecord(const record::Record& record) = 0;  // lost_before = losses just before it
  virtual void OnLost(uint64_t count) = 0;                    // losses not attached to a record (trailing)
};

class RecordStream {
 public:
  // Opens a binary stream of instances/<instance> (it must exist; "" = top)
  // on its own connection to the daemon at `dir` ("" = default dir). Errors:
  // those of ConsumerClient::Connect, ENOENT (no such instance), EACCES.
  static base::ErrorOr<std::unique_ptr<RecordStream>> Open(const std::string& dir, const std::string& instance);

  int fd() const { return stream_.get(); }  // readable when data is waiting (for poll)

  // Hands everything available to `sink`, waiting up to timeout_ms (<0:
  // forever) for the first bytes. Returns 0, ETIMEDOUT when nothing came,
  // EPIPE when the daemon ended the stream (everything before the end was
  // delivered), EPROTO for a malformed stream, or another errno.
  int Poll(int timeout_ms, RecordSink& sink);

  // Bytes of the stream received so far.
  uint64_t bytes_received() const { return bytes_received_; }

 private:
  RecordStream(ConsumerClient control, base::ScopedFd stream);
  // Hands the whole frames in buf_ to `sink`; false on a malformed frame.
  bool DeliverFrames(RecordSink& sink);

  ConsumerClient control_;  // the stream lives as long as this connection
  base::ScopedFd stream_;
  std::vector<uint8_t> buf_;
  size_t begin_ = 0, end_ = 0;  // unread bytes in buf_
  uint64_t bytes_received_ = 0;
};

}  // namespace udiag::consumer
