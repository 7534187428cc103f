// The daemon's end of one binary record stream (ipc/record_stream_format.h):
// consumes an instance's buffer as a trace_pipe reader does, and copies the
// entries into the stream's shared ring (ipc/stream_ring.h) in large
// batches, each event type and task first. Runs of entries are copied
// straight from the buffer's memory, as stored, between their frame headers;
// only what the ring had no room for is kept aside, to go first next time.
// The socket beside the ring carries wake-ups both ways.
//
// In page mode the entries are instead encoded into one ftrace ring-buffer
// page per cpu, and only whole pages go out (kPage frames): the reader, a
// trace.dat recorder, stores them as they are, with no work per event. A
// partly filled page goes out once it has waited kPageFlushNs, or when the
// instance stops tracing (the end of a recording). When it is the instance's
// only reader it is the instance's RecordTaker: the drain loop hands it each
// record, which goes into its page at once, and the buffer stays empty.
//
// With a PageFileWriter (a trace.dat recorder that handed over its file),
// the pages go into the file from here (kFilePage frames only count them),
// kFileProgress frames say how much of each cpu's region is on disk, and
// kFileSynced says that everything taken is, once the instance stops tracing.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/scoped_fd.h"
#include "ipc/record_stream_format.h"
#include "ipc/stream_ring.h"
#include "record/tracedat/page_encoder.h"
#include "service/event_registry.h"
#include "service/instance.h"
#include "service/page_file_writer.h"

namespace udiag::service {

class RecordStreamSender final : public RecordTaker {
 public:
  // The thread name for a task frame ("" when unknown).
  using CommLookup = std::function<std::string(uint32_t tid)>;

  RecordStreamSender(base::ScopedFd socket, std::unique_ptr<ipc::StreamRing> ring, Instance* instance,
                     const EventRegistry* registry, CommLookup comm, bool pages = false,
                     std::unique_ptr<PageFileWriter> file = nullptr);

  // How long a partly filled page may wait for more records (page mode).
  static constexpr uint64_t kPageFlushNs = 100'000'000;

  int fd() const { return socket_.get(); }
  Instance* instance() const { return instance_; }

  // Moves what the instance's buffer holds into the ring. Returns 0 when
  // everything went out, EAGAIN when the ring is full (call again once the
  // reader pokes the socket; the rest waits in the instance buffer, where
  // losses are counted), or the errno of a broken stream (EPROTO: the reader
  // broke the ring's protocol).
  int Pump();
  // Reads the reader's wake-ups off the socket. False when it hung up.
  bool TakeWakeups();
  // For the daemon's loop about to sleep: its file's writes wake it from
  // now on (Pump lets them not, while the loop comes round anyway). False
  // when a write ended unseen meanwhile: the loop must take it first.
  bool MaySleep();
  // Whether the file's writer has no page it can lend for certain (every
  // one is queued or on its way to the disk): pages taken from the rings
  // now would be copied and checked only to be dropped. Then what waits
  // for a full block is submitted, and the end of a write wakes the loop.
  bool FileOutOfPages();
  // The event with this id is gone; if the id is reused, its type is sent again.
  void ForgetType(uint32_t id);
  // Page mode: encodes a record into its cpu's page now (RecordTaker). What
  // waits for room in the ring is bounded by the instance's buffer size;
  // beyond it records are counted as lost.
  void Take(const Event& event, const EntryMeta& meta, uint64_t lost_before,
            std::span<const uint8_t> record) override;
  // Take in place (RecordTaker): the record's cpu page while nothing is
  // lost or backed up and the cpu has had a record; otherwise null, and
  // Take makes the cpu's page, finishes full ones and marks losses.
  record::tracedat::PageEncoder* StartRun(const Event& event, const EntryMeta& meta) override;
  void EndRun(uint16_t type, uint32_t records) override;
  // A producer's page, checked (RecordTaker): goes out as it is, after the
  // page its cpu was filling, with the losses before it marked on it.
  void TakePage(const EntryMeta& meta, CheckedPage& page, uint64_t lost_before) override;
  // A free page of the stream's pool (page mode): a page checked there goes
  // out in a kPoolPage frame, not copied; or to the file, when pages go there.
  uint8_t* LendPage(uint16_t cpu) override;
  void GiveBackPage(const uint8_t* page) override;
  // Page mode: what the ring and the backlog's room (the instance buffer's
  // size) take before Take and TakePage drop.
  size_t RoomFor(size_t record_bytes) override;

 private:
  // One records frame of a batch: its header, after any frames before it,
  // ends out_ at `out_end`; its entries are still in the instance buffer.
  struct Piece {
    size_t out_end = 0;
    std::span<const uint8_t> records;
    size_t count = 0;
  };

  // Page mode's Pump.
  int PumpPages();
  // Page mode: copies what out_ holds past out_sent_ into the ring, as much
  // as fits (frames may be split: the stream is a byte stream).
  int SendPending();
  // Publishes `bytes` written into the ring and wakes a sleeping reader.
  int Publish(size_t bytes);
  // Sends the types and task frames a record of `event` from `meta`'s thread needs first.
  void AnnounceSender(const Event& event, uint32_t pid, uint32_t tid);
  // Encodes the entries of the buffer's oldest run into pages, consuming
  // them, until out_ holds a batch. False when the buffer was empty.
  bool EncodePages();
  // A cpu's page being filled, and what the page frame will say of it.
  struct CpuPage {
    record::tracedat::PageEncoder encoder;
    // The file's page the encoder builds in (BuildInFilePage), or null.
    uint8_t* file_page = nullptr;
    uint32_t events = 0;
    uint32_t only_type = 0;  // 0: none yet, or several
    void Count(uint16_t type, uint32_t records = 1) {
      only_type = events == 0 || only_type == type ? type : 0;
      events += records;
    }
  };

  // Adds one record to its cpu's page, first closing the page when it is
  // full or the record follows lost events.
  void EncodeRecord(uint16_t cpu, uint64_t timestamp, uint64_t lost_before, std::span<const uint8_t> record);
  // Appends the page of `cpu` to out_ as a kPage frame; it is empty afterwards.
  void AppendPage(uint32_t cpu, CpuPage& page);
  // A recording to a file: an empty page of `cpu` is built in a page lent
  // by the file, where it is kept, rather than copied there once full. Lent
  // now, it is cut ahead of the whole pages lent while it fills, and so it
  // comes before them in memory as in the file.
  void BuildInFilePage(uint32_t cpu, CpuPage& page);
  // Where a frame of `bytes` goes: in page mode straight into the ring when
  // nothing waits before it and there is room (published by the next
  // SendPending), else at the end of out_.
  uint8_t* FrameSpace(size_t bytes);
  // FrameSpace for a kPage frame, its header and PageFrame written.
  uint8_t* AppendPageFrame(const ipc::PageFrame& frame);
  // Drops `events` taken from the instance for want of room: reported to the
  // recorder before the next page (with `lost_before` already lost), and
  // counted in the instance's `dropped`, for its stats to say where.
  void Drop(uint64_t events, uint64_t lost_before);
  // File mode: queues `page` (the file writer's) for the file and counts it
  // in a kFilePage frame (with the page when its events are of several
  // types); if the file takes no more, its events count as lost.
  void SendToFile(uint32_t cpu, uint8_t* page, const ipc::PageFrame& frame);
  // File mode: what has reached the disk, a write error, and once the
  // instance stops tracing, the rest written and kFileSynced.
  void ReportFile(bool ending);
  // Sends the partly filled pages when they have waited long enough, or
  // every one when `all`.
  void FlushPages(bool all);

  // Appends frames for the buffer's run at `index` to `out_`, leaving its
  // records in the buffer as `piece` (count 0: none). False when there was
  // nothing for this batch; `last` when the batch must end after it.
  bool Fill(size_t index, Piece* piece, bool* last);
  // Copies `out_` with `pieces_` in place into the ring, consumes the pieces
  // from the buffer, and keeps in `out_` what the ring had no room for.
  int SendBatch();
  // Copies the batch's pieces into the ring, as many bytes as fit.
  size_t CopyIntoRing(size_t total);
  void AppendFrameHeader(ipc::FrameKind kind, uint32_t body_bytes);
  void AppendFrame(ipc::FrameKind kind, std::span<const uint8_t> body);
  void AppendEventType(const Event& event);
  void AppendTask(uint32_t pid, uint32_t tid);
  void AppendLost(uint64_t count);
  bool TypeSent(uint32_t id) const;

  base::ScopedFd socket_;
  std::unique_ptr<ipc::StreamRing> ring_;
  Instance* instance_;
  const EventRegistry* registry_;
  CommLookup comm_;
  std::vector<uint8_t> out_;  // bytes not yet written
  size_t out_sent_ = 0;       // page mode: of out_, the bytes already in the ring
  uint64_t unpublished_ = 0;  // page mode: bytes written into the ring in place, not yet published
  std::vector<Piece> pieces_;        // of the batch being sent
  std::vector<uint8_t> unsent_;      // what the socket did not take, swapped into out_
  std::vector<iovec> iov_;
  std::vector<bool> type_sent_;  // by id - kFirstId
  std::unordered_set<uint32_t> tasks_sent_;
  // The last entry's type and task, known to be sent (most runs are one thread's).
  uint32_t last_type_ = UINT32_MAX;
  uint32_t last_tid_ = UINT32_MAX;

  // Page mode: one page being filled per cpu, the losses to mark on the
  // next page, and since when some page has held records not sent.
  const bool pages_;
  const uint32_t cpu_limit_;  // cpus beyond the machine's are folded onto its last
  std::vector<std::unique_ptr<CpuPage>> page_of_cpu_;
  uint64_t lost_pending_ = 0;
  CpuPage* run_page_ = nullptr;  // of the last StartRun
  uint64_t unsent_since_ns_ = 0;  // 0: every page is empty

  // The pool's free pages, and those named by frames the reader may not
  // have read yet: free again once its tail passes the frame's end.
  std::vector<uint32_t> free_pool_;
  struct PoolPageSent {
    uint64_t frame_end;
    uint32_t slot;
  };
  std::deque<PoolPageSent> pool_in_stream_;
  // The slot of a pool page, or UINT32_MAX for any other memory.
  uint32_t PoolSlotOf(const uint8_t* page) const;

  // File mode: the writer, what it reported last, and since when pages
  // have waited to be submitted.
  std::unique_ptr<PageFileWriter> file_;
  std::vector<PageFileWriter::Progress> progress_;
  bool file_synced_ = false;       // kFileSynced sent, and no page since
  bool file_error_sent_ = false;
  uint64_t file_queued_since_ns_ = 0;  // 0: nothing queued
};

}  // namespace udiag::service
