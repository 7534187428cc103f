#include "service/record_stream_sender.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/tsc.h"
#include "ipc/wire.h"
#include "record/tracedat/tracedat_layout.h"
#include "schema/event_description.h"

namespace udiag::service {
namespace {

// Bytes of records gathered before a write: few syscalls, bounded work.
constexpr size_t kBatchBytes = 1 << 20;
constexpr size_t kMaxPieces = 64;
// Largest run of records in one frame, leaving room for one more entry.
constexpr size_t kRunBytes = ipc::kMaxFrameBytes - 64 * 1024;
constexpr uint8_t kZeros[8] = {};

static_assert(ipc::kStreamPageSize == record::tracedat::kPageSize);
static_assert(ipc::StreamRing::kPoolPageSize == ipc::kStreamPageSize);

uint32_t CpuLimit() {
  long cpus = sysconf(_SC_NPROCESSORS_CONF);
  return static_cast<uint32_t>(std::clamp<long>(cpus, 1, 4096));
}

uint16_t TypeOf(const ipc::RecordEntry& entry, const uint8_t* at) {
  uint16_t type = 0;
  if (entry.record_size >= sizeof(type)) std::memcpy(&type, at + sizeof(ipc::RecordEntry), sizeof(type));
  return type;
}

}  // namespace

RecordStreamSender::RecordStreamSender(base::ScopedFd socket, std::unique_ptr<ipc::StreamRing> ring,
                                       Instance* instance, const EventRegistry* registry, CommLookup comm,
                                       bool pages, std::unique_ptr<PageFileWriter> file)
    : socket_(std::move(socket)),
      ring_(std::move(ring)),
      instance_(instance),
      registry_(registry),
      comm_(std::move(comm)),
      pages_(pages),
      cpu_limit_(file ? std::min(CpuLimit(), file->cpus()) : CpuLimit()),
      file_(std::move(file)) {
  for (uint64_t slot = ring_->pool_pages(); slot-- > 0;) free_pool_.push_back(static_cast<uint32_t>(slot));
  // Small frames, and what the ring had no room for of one batch.
  out_.reserve(kBatchBytes + ipc::kMaxFrameBytes);
  unsent_.reserve(kBatchBytes + ipc::kMaxFrameBytes);
}

int RecordStreamSender::Pump() {
  if (pages_) return PumpPages();
  for (;;) {
    if (int err = SendBatch()) return err;  // what the ring had no room for last time first
    bool last = false;
    size_t batch_bytes = 0;
    for (size_t index = 0; !last && batch_bytes < kBatchBytes && pieces_.size() < kMaxPieces; ++index) {
      Piece piece;
      if (!Fill(index, &piece, &last)) break;
      if (piece.count > 0) pieces_.push_back(piece);
      batch_bytes += piece.records.size();
    }
    if (pieces_.empty() && out_.empty()) return 0;
    if (int err = SendBatch()) return err;
  }
}

int RecordStreamSender::SendBatch() {
  iov_.clear();
  size_t from = 0, total = 0;
  for (const Piece& piece : pieces_) {
    iov_.push_back({out_.data() + from, piece.out_end - from});
    iov_.push_back({const_cast<uint8_t*>(piece.records.data()), piece.records.size()});
    total += piece.out_end - from + piece.records.size();
    from = piece.out_end;
  }
  iov_.push_back({out_.data() + from, out_.size() - from});
  total += out_.size() - from;
  if (total == 0) return 0;
  size_t sent = CopyIntoRing(total);
  int err = Publish(sent);
  // The pieces leave the buffer now, as if sent: what was not is copied.
  unsent_.clear();
  for (const iovec& piece : iov_) {
    const size_t skip = std::min(sent, piece.iov_len);
    sent -= skip;
    const auto* base = static_cast<const uint8_t*>(piece.iov_base);
    unsent_.insert(unsent_.end(), base + skip, base + piece.iov_len);
  }
  for (const Piece& piece : pieces_) instance_->buffer().Consume(piece.records.size(), piece.count);
  pieces_.clear();
  out_.swap(unsent_);
  if (err != 0) return err;
  return out_.empty() ? 0 : EAGAIN;
}

int RecordStreamSender::Publish(size_t bytes) {
  if (ring_->broken()) return EPROTO;
  if (bytes == 0 || !ring_->Publish(bytes)) return 0;
  // The reader sleeps: one byte wakes it (a full socket already will).
  ssize_t n = send(socket_.get(), "w", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR ? errno : 0;
}

size_t RecordStreamSender::CopyIntoRing(size_t total) {
  uint64_t room = ring_->Writable();
  // Short of room: say so first, then look again (the reader may just
  // have freed some without seeing the flag).
  if (room < total) room = ring_->WaitForRoom();
  uint8_t* to = ring_->write_position();
  size_t copied = 0;
  for (const iovec& piece : iov_) {
    const size_t n = std::min<size_t>(piece.iov_len, room - copied);
    std::memcpy(to + copied, piece.iov_base, n);
    copied += n;
    if (copied == room) break;
  }
  return copied;
}

int RecordStreamSender::PumpPages() {
  for (;;) {
    if (int err = SendPending()) return err;
    if (!EncodePages()) break;
  }
  const bool ending = !instance_->tracing_on();
  FlushPages(ending);
  // Losses after the last record go out on their own only at the end:
  // until then the next page carries them.
  if (ending && unsent_since_ns_ == 0 && lost_pending_ > 0) AppendLost(std::exchange(lost_pending_, 0));
  if (file_) ReportFile(ending);
  return SendPending();
}

int RecordStreamSender::SendPending() {
  // Pages written into the ring in place go first: they precede out_.
  if (unpublished_ > 0) {
    if (int err = Publish(std::exchange(unpublished_, 0))) return err;
  }
  const size_t total = out_.size() - out_sent_;
  if (total == 0) return 0;
  uint64_t room = ring_->Writable();
  if (room < total) room = ring_->WaitForRoom();
  const size_t n = std::min<size_t>(room, total);
  std::memcpy(ring_->write_position(), out_.data() + out_sent_, n);
  out_sent_ += n;
  if (out_sent_ == out_.size()) {
    out_.clear();
    out_sent_ = 0;
  } else if (out_sent_ >= kBatchBytes) {
    // Moved down once a batch went out, so the backlog is copied O(1) times per byte.
    out_.erase(out_.begin(), out_.begin() + static_cast<ptrdiff_t>(out_sent_));
    out_sent_ = 0;
  }
  if (int err = Publish(n)) return err;
  return out_.empty() ? 0 : EAGAIN;
}

void RecordStreamSender::Take(const Event& event, const EntryMeta& meta, uint64_t lost_before,
                              std::span<const uint8_t> record) {
  if (out_.size() - out_sent_ > instance_->buffer().capacity()) {
    Drop(1, lost_before);  // the recorder is that far behind: as a full buffer drops
    return;
  }
  if (event.id != last_type_ || meta.tid != last_tid_) AnnounceSender(event, meta.pid, meta.tid);
  EncodeRecord(meta.cpu, meta.timestamp, lost_before, record);
  if (unsent_since_ns_ == 0) unsent_since_ns_ = base::MonotonicNs();
}

record::tracedat::PageEncoder* RecordStreamSender::StartRun(const Event& event, const EntryMeta& meta) {
  const uint32_t slot = std::min<uint32_t>(meta.cpu, cpu_limit_ - 1);
  if (lost_pending_ != 0 || slot >= page_of_cpu_.size() || !page_of_cpu_[slot] ||
      out_.size() - out_sent_ > instance_->buffer().capacity()) {
    return nullptr;
  }
  if (event.id != last_type_ || meta.tid != last_tid_) AnnounceSender(event, meta.pid, meta.tid);
  run_page_ = page_of_cpu_[slot].get();
  BuildInFilePage(slot, *run_page_);
  return &run_page_->encoder;
}

void RecordStreamSender::EndRun(uint16_t type, uint32_t records) {
  if (records == 0) return;
  run_page_->Count(type, records);
  if (unsent_since_ns_ == 0) unsent_since_ns_ = base::MonotonicNs();
}

void RecordStreamSender::AnnounceSender(const Event& event, uint32_t pid, uint32_t tid) {
  if (!TypeSent(event.id)) AppendEventType(event);
  if (tid != last_tid_ && !tasks_sent_.contains(tid)) AppendTask(pid, tid);
  last_type_ = event.id;
  last_tid_ = tid;
}

bool RecordStreamSender::EncodePages() {
  TraceBuffer& buffer = instance_->buffer();
  std::span<const uint8_t> run = buffer.RunAt(0);
  if (run.empty()) {
    lost_pending_ += buffer.TakePendingLost();
    return false;
  }
  size_t bytes = 0, count = 0;
  while (bytes < run.size() && out_.size() < kBatchBytes) {
    const uint8_t* at = run.data() + bytes;
    ipc::RecordEntry entry;
    std::memcpy(&entry, at, sizeof(entry));
    bytes += entry.size;
    ++count;
    uint16_t type = TypeOf(entry, at);
    if (type != last_type_ || entry.tid != last_tid_) {
      const Event* event = registry_->FindById(type);
      if (!event) {  // gone meanwhile: no type to send, so it counts as lost
        lost_pending_ += 1 + entry.lost_before;
        continue;
      }
      AnnounceSender(*event, entry.pid, entry.tid);
    }
    EncodeRecord(entry.cpu, entry.timestamp, entry.lost_before, {at + sizeof(entry), entry.record_size});
  }
  buffer.Consume(bytes, count);
  if (unsent_since_ns_ == 0) unsent_since_ns_ = base::MonotonicNs();
  return true;
}

void RecordStreamSender::EncodeRecord(uint16_t cpu, uint64_t timestamp, uint64_t lost_before,
                                      std::span<const uint8_t> record) {
  using record::tracedat::PageEncoder;
  const uint32_t slot = std::min<uint32_t>(cpu, cpu_limit_ - 1);
  if (slot >= page_of_cpu_.size()) page_of_cpu_.resize(slot + 1);
  std::unique_ptr<CpuPage>& page = page_of_cpu_[slot];
  if (!page) page = std::make_unique<CpuPage>();
  const uint64_t lost = lost_before + std::exchange(lost_pending_, 0);
  if (record.size() < schema::kCommonHeaderSize || record.size() > PageEncoder::MaxDataSize()) {
    lost_pending_ = lost + 1;  // no page holds it
    return;
  }
  if (lost > 0) {
    // ftrace marks losses on the page that follows them.
    if (!page->encoder.empty()) AppendPage(slot, *page);
    page->encoder.MarkLostBefore(lost);
  }
  BuildInFilePage(slot, *page);
  if (!page->encoder.Append(timestamp, record)) {
    AppendPage(slot, *page);
    BuildInFilePage(slot, *page);
    page->encoder.Append(timestamp, record);  // fits: an empty page takes MaxDataSize
  }
  uint16_t type;
  std::memcpy(&type, record.data(), sizeof(type));
  page->Count(type);
}

uint8_t* RecordStreamSender::FrameSpace(size_t bytes) {
  // In page mode, with nothing waiting before it, a frame is written
  // straight into the ring: for a page, one copy of it fewer.
  if (pages_ && out_.size() == out_sent_ && ring_->Writable() >= unpublished_ + bytes) {
    uint8_t* const to = ring_->write_position() + unpublished_;  // the ring is mapped twice: no wrap to mind
    unpublished_ += bytes;
    return to;
  }
  out_.resize(out_.size() + bytes);
  return out_.data() + out_.size() - bytes;
}

uint8_t* RecordStreamSender::AppendPageFrame(const ipc::PageFrame& frame) {
  constexpr size_t kFrameTotal = sizeof(ipc::FrameHeader) + ipc::kPageFrameBytes;
  static_assert(kFrameTotal == ipc::PadTo8(kFrameTotal));
  uint8_t* const to = FrameSpace(kFrameTotal);
  const ipc::FrameHeader header{ipc::FrameKind::kPage, ipc::kPageFrameBytes};
  std::memcpy(to, &header, sizeof(header));
  std::memcpy(to + sizeof(header), &frame, sizeof(frame));
  return to + sizeof(header) + sizeof(frame);
}

void RecordStreamSender::AppendPage(uint32_t cpu, CpuPage& page) {
  const ipc::PageFrame frame{.cpu = cpu,
                             .events = std::exchange(page.events, 0),
                             .only_type = std::exchange(page.only_type, 0),
                             .data_bytes = page.encoder.data_bytes(),
                             .lost_before = page.encoder.lost_before()};
  if (!file_) {
    page.encoder.FinishInto(AppendPageFrame(frame));
    return;
  }
  uint8_t* const to = page.file_page ? std::exchange(page.file_page, nullptr) : file_->Lend(cpu);
  if (!to) {  // every page is on its way to the disk: as a full buffer drops
    uint8_t scratch[ipc::kStreamPageSize];
    page.encoder.FinishInto(scratch);
    Drop(frame.events, frame.lost_before);
    return;
  }
  page.encoder.FinishInto(to);
  SendToFile(cpu, to, frame);
}

void RecordStreamSender::BuildInFilePage(uint32_t cpu, CpuPage& page) {
  if (!file_ || page.file_page || !page.encoder.empty()) return;
  page.file_page = file_->Lend(cpu);
  if (page.file_page) page.encoder.BuildIn(page.file_page);
}

void RecordStreamSender::Drop(uint64_t events, uint64_t lost_before) {
  lost_pending_ += lost_before + events;
  instance_->buffer().NoteDropped(events);
}

void RecordStreamSender::SendToFile(uint32_t cpu, uint8_t* page, const ipc::PageFrame& frame) {
  if (!file_->Append(cpu, page)) {
    Drop(frame.events, frame.lost_before);
    return;
  }
  if (file_queued_since_ns_ == 0) file_queued_since_ns_ = base::MonotonicNs();
  file_synced_ = false;
  // A page of several types goes along, for the recorder to count them by type.
  const bool with_page = frame.only_type == 0;
  const uint32_t body = sizeof(frame) + (with_page ? ipc::kStreamPageSize : 0);
  uint8_t* const to = FrameSpace(sizeof(ipc::FrameHeader) + body);
  const ipc::FrameHeader header{ipc::FrameKind::kFilePage, body};
  std::memcpy(to, &header, sizeof(header));
  std::memcpy(to + sizeof(header), &frame, sizeof(frame));
  if (with_page) std::memcpy(to + sizeof(header) + sizeof(frame), page, ipc::kStreamPageSize);
}

void RecordStreamSender::ReportFile(bool ending) {
  // The loop comes round within its doze (at most 20 ms) while it does not
  // sleep (MaySleep): a write's end needs no wake of its own but when the
  // recording ends or pages run short.
  file_->SetWakeAfterWrites(ending || file_->LowOnPages());
  // Pages that have waited kPageFlushNs are written however few, so that a
  // quiet recording's pages reach the disk (and the recorder's header).
  if (file_queued_since_ns_ != 0 && (ending || base::MonotonicNs() - file_queued_since_ns_ >= kPageFlushNs)) {
    file_->SubmitAll();
    file_queued_since_ns_ = 0;
  }
  progress_.clear();
  file_->TakeProgress(&progress_);
  for (const PageFileWriter::Progress& progress : progress_) {
    ipc::FileProgress body{progress.cpu, 0, progress.bytes};
    AppendFrame(ipc::FrameKind::kFileProgress, {reinterpret_cast<const uint8_t*>(&body), sizeof(body)});
  }
  if (const int error = file_->error(); error != 0 && !file_error_sent_) {
    const ipc::FileError body{error, 0};
    AppendFrame(ipc::FrameKind::kFileError, {reinterpret_cast<const uint8_t*>(&body), sizeof(body)});
    file_error_sent_ = true;
  }
  if (!ending) {
    file_synced_ = false;
  } else if (!file_synced_ && unsent_since_ns_ == 0 && file_->Idle()) {
    AppendFrame(ipc::FrameKind::kFileSynced, {});
    file_synced_ = true;
  }
}

bool RecordStreamSender::MaySleep() { return !file_ || !file_->WakeAfterWritesFromNow(); }

bool RecordStreamSender::FileOutOfPages() {
  if (!file_ || file_->free_pages() != 0) return false;
  if (!file_->Writing()) file_->SubmitAll();
  file_->SetWakeAfterWrites(true);
  return true;
}

uint32_t RecordStreamSender::PoolSlotOf(const uint8_t* page) const {
  const uint8_t* const pool = ring_->pool_page(0);
  if (ring_->pool_pages() == 0 || page < pool || page >= pool + ring_->pool_pages() * ipc::StreamRing::kPoolPageSize) {
    return UINT32_MAX;
  }
  return static_cast<uint32_t>((page - pool) / ipc::StreamRing::kPoolPageSize);
}

uint8_t* RecordStreamSender::LendPage(uint16_t cpu) {
  if (file_) {
    // The cpu's page of single records goes to the file before this one.
    // It was lent before this one (BuildInFilePage) unless the file had
    // none then: lent now, this page would come first in memory and second
    // in the file, and split the write (TakePage copies the page into one
    // lent in order instead).
    const uint32_t to_cpu = std::min<uint32_t>(cpu, cpu_limit_ - 1);
    if (to_cpu < page_of_cpu_.size() && page_of_cpu_[to_cpu] && !page_of_cpu_[to_cpu]->file_page &&
        !page_of_cpu_[to_cpu]->encoder.empty()) {
      return nullptr;
    }
    return file_->Lend(to_cpu);
  }
  if (free_pool_.empty() && !pool_in_stream_.empty()) {
    ring_->Writable();  // reads the reader's tail
    while (!pool_in_stream_.empty() && pool_in_stream_.front().frame_end <= ring_->read_by_reader()) {
      free_pool_.push_back(pool_in_stream_.front().slot);
      pool_in_stream_.pop_front();
    }
  }
  if (free_pool_.empty()) return nullptr;
  const uint32_t slot = free_pool_.back();
  free_pool_.pop_back();
  return ring_->pool_page(slot);
}

size_t RecordStreamSender::RoomFor(size_t record_bytes) {
  // A record, or a page taken whole or apart, costs at most the page frame
  // it closes and the one it opens, and its type's and thread's frames.
  constexpr size_t kAnnounceBytes = 1024;
  const size_t cost = std::max<size_t>(record_bytes, 2 * (sizeof(ipc::FrameHeader) + ipc::kPageFrameBytes)) + kAnnounceBytes;
  const size_t backlog = out_.size() - out_sent_;
  const size_t capacity = instance_->buffer().capacity();
  // Frames go into the ring while it has room (FrameSpace), then wait in out_.
  const uint64_t writable = ring_->Writable();
  const uint64_t ring_room = backlog == 0 && writable > unpublished_ ? writable - unpublished_ : 0;
  const size_t room = (ring_room + (capacity > backlog ? capacity - backlog : 0)) / cost;
  if (!file_) return room;
  // Pages to the file: each record or page may close its cpu's page and
  // bring its own. With none left and no write under way to free some,
  // the pages waiting for a full block go now (a holding-back drain, which
  // lends no page meanwhile, would otherwise wait for kPageFlushNs).
  const size_t free_pages = file_->free_pages();
  if (free_pages < 2 && !file_->Writing()) file_->SubmitAll();
  return std::min(room, free_pages / 2);
}

void RecordStreamSender::GiveBackPage(const uint8_t* page) {
  if (file_) {
    if (file_->Owns(page)) file_->GiveBack(page);
    return;
  }
  if (const uint32_t slot = PoolSlotOf(page); slot != UINT32_MAX) free_pool_.push_back(slot);
}

void RecordStreamSender::TakePage(const EntryMeta& meta, CheckedPage& page, uint64_t lost_before) {
  lost_pending_ += lost_before;
  const uint32_t pool_slot = PoolSlotOf(page.page);
  if (out_.size() - out_sent_ > instance_->buffer().capacity()) {
    Drop(page.events, 0);  // the recorder is that far behind: as a full buffer drops
    GiveBackPage(page.page);
    return;
  }
  for (uint32_t i = 0; i < page.type_count; ++i) {
    if (page.types[i] == last_type_ && meta.tid == last_tid_) continue;
    if (const Event* event = registry_->FindById(page.types[i])) AnnounceSender(*event, meta.pid, meta.tid);
  }
  const uint32_t cpu = std::min<uint32_t>(meta.cpu, cpu_limit_ - 1);
  if (cpu < page_of_cpu_.size() && page_of_cpu_[cpu] && !page_of_cpu_[cpu]->encoder.empty()) {
    AppendPage(cpu, *page_of_cpu_[cpu]);  // its records came first
  }
  const uint64_t lost = std::exchange(lost_pending_, 0);
  if (lost != 0) {  // the room after the events was left for this (ring_layout.h)
    std::memcpy(page.page + record::tracedat::kPageHeaderSize + page.data_bytes, &lost, sizeof(lost));
    const uint64_t commit =
        page.data_bytes | record::tracedat::kCommitMissedEvents | record::tracedat::kCommitMissedStored;
    std::memcpy(page.page + 8, &commit, sizeof(commit));
  }
  ipc::PageFrame frame{.cpu = cpu,
                       .events = page.events,
                       .only_type = page.only_type,
                       .data_bytes = page.data_bytes,
                       .lost_before = lost};
  if (file_) {
    uint8_t* to = file_->Owns(page.page) ? page.page : file_->Lend(cpu);
    if (!to) {
      Drop(frame.events, frame.lost_before);
      return;
    }
    if (to != page.page) std::memcpy(to, page.page, ipc::kStreamPageSize);
    SendToFile(cpu, to, frame);
    return;
  }
  if (pool_slot != UINT32_MAX) {  // already where the reader reads it: only named
    frame.pool_slot = pool_slot;
    AppendFrame(ipc::FrameKind::kPoolPage, {reinterpret_cast<const uint8_t*>(&frame), sizeof(frame)});
    pool_in_stream_.push_back({ring_->written() + unpublished_ + (out_.size() - out_sent_), pool_slot});
    return;
  }
  std::memcpy(AppendPageFrame(frame), page.page, ipc::kStreamPageSize);
}

void RecordStreamSender::FlushPages(bool all) {
  if (unsent_since_ns_ == 0 || (!all && base::MonotonicNs() - unsent_since_ns_ < kPageFlushNs)) return;
  for (uint32_t cpu = 0; cpu < page_of_cpu_.size(); ++cpu) {
    if (page_of_cpu_[cpu] && !page_of_cpu_[cpu]->encoder.empty()) AppendPage(cpu, *page_of_cpu_[cpu]);
  }
  unsent_since_ns_ = 0;
}

bool RecordStreamSender::TakeWakeups() {
  char bytes[64];
  for (;;) {
    ssize_t n = read(socket_.get(), bytes, sizeof(bytes));
    if (n > 0) continue;
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

bool RecordStreamSender::Fill(size_t index, Piece* piece, bool* last) {
  TraceBuffer& buffer = instance_->buffer();
  std::span<const uint8_t> run = buffer.RunAt(index);
  *last = true;
  if (run.empty()) {
    // Losses with no entry after them go out once the buffer is empty.
    if (!buffer.pending_lost()) return false;
    AppendLost(buffer.TakePendingLost());
    return true;
  }
  size_t bytes = 0, count = 0;
  uint64_t dropped = 0;  // records of an event already gone: no type to send
  while (bytes < run.size() && bytes < kRunBytes) {
    const uint8_t* at = run.data() + bytes;
    ipc::RecordEntry entry;
    std::memcpy(&entry, at, sizeof(entry));
    uint16_t type = TypeOf(entry, at);
    // Most entries repeat the last one's type and thread, both sent already.
    if (type != last_type_ || entry.tid != last_tid_) {
      bool new_task = entry.tid != last_tid_ && !tasks_sent_.contains(entry.tid);
      if (!TypeSent(type) || new_task) {
        if (count > 0) break;  // send the run so far; the new one starts the next
        const Event* event = registry_->FindById(type);
        // Consumed at once, so only at the front: a later run waits its turn.
        if (!event && index > 0) return false;
        if (!event) {
          dropped = 1 + entry.lost_before;
          bytes = entry.size;
          break;
        }
        if (!TypeSent(type)) AppendEventType(*event);
        if (new_task) AppendTask(entry.pid, entry.tid);
      }
      last_type_ = type;
      last_tid_ = entry.tid;
    }
    bytes += entry.size;
    ++count;
  }
  if (dropped) {
    buffer.Consume(bytes, 1);
    AppendLost(dropped);
    return true;
  }
  AppendFrameHeader(ipc::FrameKind::kRecords, bytes);
  *piece = {out_.size(), run.first(bytes), count};
  out_.insert(out_.end(), kZeros, kZeros + (ipc::PadTo8(bytes) - bytes));
  *last = bytes < run.size();
  return true;
}

void RecordStreamSender::AppendFrameHeader(ipc::FrameKind kind, uint32_t body_bytes) {
  ipc::FrameHeader header{kind, body_bytes};
  const auto* at = reinterpret_cast<const uint8_t*>(&header);
  out_.insert(out_.end(), at, at + sizeof(header));
}

void RecordStreamSender::AppendFrame(ipc::FrameKind kind, std::span<const uint8_t> body) {
  const size_t padded = ipc::PadTo8(static_cast<uint32_t>(body.size()));
  uint8_t* const to = FrameSpace(sizeof(ipc::FrameHeader) + padded);
  const ipc::FrameHeader header{kind, static_cast<uint32_t>(body.size())};
  std::memcpy(to, &header, sizeof(header));
  if (!body.empty()) std::memcpy(to + sizeof(header), body.data(), body.size());  // kFileSynced has none
  std::memset(to + sizeof(header) + body.size(), 0, padded - body.size());
}

void RecordStreamSender::AppendEventType(const Event& event) {
  std::string command = schema::DynamicEventsLine(event.desc).substr(2);  // without "u:"
  ipc::Encoder e;
  e.Put<uint32_t>(event.id).PutBytes(event.system()).PutBytes(event.tp_name).PutBytes(command);
  AppendFrame(ipc::FrameKind::kEventType, e.bytes());
  size_t slot = event.id - EventRegistry::kFirstId;
  if (slot >= type_sent_.size()) type_sent_.resize(slot + 1);
  type_sent_[slot] = true;
}

void RecordStreamSender::AppendTask(uint32_t pid, uint32_t tid) {
  ipc::Encoder e;
  e.Put(pid).Put(tid).PutBytes(comm_(tid));
  AppendFrame(ipc::FrameKind::kTask, e.bytes());
  tasks_sent_.insert(tid);
}

void RecordStreamSender::AppendLost(uint64_t count) {
  ipc::Encoder e;
  e.Put(count);
  AppendFrame(ipc::FrameKind::kLost, e.bytes());
}

bool RecordStreamSender::TypeSent(uint32_t id) const {
  size_t slot = id - EventRegistry::kFirstId;
  return id >= EventRegistry::kFirstId && slot < type_sent_.size() && type_sent_[slot];
}

void RecordStreamSender::ForgetType(uint32_t id) {
  if (TypeSent(id)) type_sent_[id - EventRegistry::kFirstId] = false;
  if (id == last_type_) last_type_ = UINT32_MAX;
}

}  // namespace udiag::service
