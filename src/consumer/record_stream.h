// The client side of an instance's binary record stream: what `udiag record`
// reads. The daemon consumes the instance's buffer into the stream's shared
// ring (as trace_pipe does, in binary: ipc/record_stream_format.h,
// ipc/stream_ring.h); this decodes the frames in place into the recording
// model (record/trace_model.h) in large batches.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/error_or.h"
#include "base/scoped_fd.h"
#include "consumer/consumer_client.h"
#include "ipc/stream_ring.h"
#include "record/trace_model.h"

namespace udiag::consumer {

// What the daemon says of a page it sent.
struct PageCounts {
  uint32_t events = 0;       // records on it
  uint32_t only_type = 0;    // the event id of all of them, or 0 when they are of several
  uint32_t data_bytes = 0;   // of its events, after the page header
  uint64_t lost_before = 0;  // events lost just before it
};

// Receives a record stream in order. Types and tasks always come before the first record that uses them.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void OnEventType(const record::EventType& type) = 0;
  virtual void OnTask(const record::Task& task) = 0;
  virtual void OnRecord(const record::Record& record) = 0;  // lost_before = losses just before it
  virtual void OnLost(uint64_t count) = 0;                    // losses not attached to a record (trailing)
  // A page-mode stream's ftrace ring-buffer page of `cpu` (ipc::kStreamPageSize
  // bytes, valid during the call): its records, in time order, `counts` as
  // the daemon counted them. Returns false when the page is malformed or the
  // sink takes no pages (the stream then fails with EPROTO).
  virtual bool OnPage(uint16_t cpu, std::span<const uint8_t> page, const PageCounts& counts) {
    (void)cpu;
    (void)page;
    (void)counts;
    return false;
  }
  // A stream that writes its pages into the recorder's file (Open's `file`):
  // the next page of `cpu`'s region, counted; `page` holds it only when its
  // events are of several types (counts.only_type 0), else it is empty.
  virtual bool OnFilePage(uint16_t cpu, std::span<const uint8_t> page, const PageCounts& counts) {
    (void)cpu;
    (void)page;
    (void)counts;
    return false;
  }
  // The first `bytes` of `cpu`'s region are on disk.
  virtual bool OnPagesOnDisk(uint16_t cpu, uint64_t bytes) {
    (void)cpu;
    (void)bytes;
    return false;
  }
  // The daemon could not write the file (an errno); later pages count as lost.
  virtual bool OnFileError(int error) {
    (void)error;
    return false;
  }
  // Tracing has stopped and every page counted is on disk.
  virtual bool OnFileSynced() { return false; }
};

class RecordStream {
 public:
  // Opens a binary stream of instances/<instance> (it must exist; "" = top)
  // on its own connection to the daemon at `dir` ("" = default dir); with
  // `pages`, records come to RecordSink::OnPage a page at a time. Errors:
  // those of ConsumerClient::Connect, ENOENT (no such instance), EACCES.
  // With `file` as well, the daemon is asked to write the pages into that
  // file itself (writes_file() says whether it does).
  static base::ErrorOr<std::unique_ptr<RecordStream>> Open(const std::string& dir, const std::string& instance,
                                                           bool pages = false,
                                                           const ConsumerClient::PageFile* file = nullptr);

  bool writes_file() const { return writes_file_; }

  int fd() const { return socket_.get(); }  // readable when the daemon pokes (for poll)

  // Hands everything available to `sink`, waiting up to timeout_ms (<0:
  // forever) for a whole frame. Returns 0, ETIMEDOUT when nothing came,
  // EPIPE when the daemon ended the stream (everything before the end was
  // delivered), EPROTO for a malformed stream, or another errno. With
  // `doze` (and timeout_ms >= 0) the daemon pokes only once an eighth of the
  // ring is readable, and frames may wait out the timeout: for a reader
  // that polls again at once and would rather not be woken for every batch
  // (a recorder writing a file).
  int Poll(int timeout_ms, RecordSink& sink, bool doze = false);

 private:
  RecordStream(ConsumerClient control, base::ScopedFd socket, std::unique_ptr<ipc::StreamRing> ring,
               bool writes_file);
  // Hands the whole frames of the ring to `sink` and frees them; false on a
  // malformed frame. Sets need_ to the bytes the next frame needs.
  bool DeliverFrames(RecordSink& sink);
  // Waits up to timeout_ms for need_ bytes or a hang-up; 0, ETIMEDOUT, EPIPE.
  int WaitForFrame(int timeout_ms, bool doze);

  ConsumerClient control_;  // the stream lives as long as this connection
  base::ScopedFd socket_;   // wake-ups, both ways
  std::unique_ptr<ipc::StreamRing> ring_;
  uint64_t need_;              // bytes of the ring the next frame needs at least
  bool hung_up_ = false;       // the daemon ended the stream
  bool writes_file_;
  uint64_t bytes_received_ = 0;  // of the stream: how much a Poll has taken
};

}  // namespace udiag::consumer
