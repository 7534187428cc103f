#include "service/trace_buffer.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace udiag::service {
namespace {
constexpr size_t Align8(size_t n) { return (n + 7) & ~size_t{7}; }
}  // namespace

TraceBuffer::TraceBuffer(size_t capacity_bytes) : capacity_(std::max(capacity_bytes, kChunkBytes)) {}

bool TraceBuffer::Append(const EntryMeta& meta, std::span<const uint8_t> record) {
  size_t need = Align8(sizeof(StoredHeader) + record.size());
  if (need > kChunkBytes) {
    Refuse();
    return false;
  }
  if (!chunks_.empty() && chunks_.back().read == chunks_.back().used) {
    // Everything was consumed: start the last chunk over rather than keep it empty.
    chunks_.back().read = chunks_.back().used = 0;
  }
  if (chunks_.empty() || kChunkBytes - chunks_.back().used < need) {
    if ((chunks_.size() + 1) * kChunkBytes > capacity_) {
      if (!overwrite_ || chunks_.empty()) {
        Refuse();
        return false;
      }
      DropOldestChunk();
    }
    AddChunk();
  }
  Chunk& c = chunks_.back();
  // Built in place: a copy from the stack stalled on store forwarding.
  // Entries start 8-aligned in memory from new[], as StoredHeader needs.
  new (c.bytes.get() + c.used) StoredHeader{static_cast<uint32_t>(need), static_cast<uint32_t>(record.size()),
                                            pending_lost_, meta.timestamp, meta.pid, meta.tid, meta.cpu, {}};
  std::memcpy(c.bytes.get() + c.used + sizeof(StoredHeader), record.data(), record.size());
  c.used += need;
  ++c.count;
  ++entries_;
  ++accepted_;
  pending_lost_ = 0;
  return true;
}

size_t TraceBuffer::RoomFor(size_t record_bytes) const {
  const size_t need = Align8(sizeof(StoredHeader) + record_bytes);
  if (need > kChunkBytes) return 0;
  size_t room = 0;
  if (!chunks_.empty()) {
    const Chunk& last = chunks_.back();
    room = (kChunkBytes - (last.read == last.used ? 0 : last.used)) / need;  // Append reuses a consumed one
  }
  return room + (max_chunks() - std::min(max_chunks(), chunks_.size())) * (kChunkBytes / need);
}

TraceEntry TraceBuffer::View(const uint8_t* p) {
  StoredHeader h;
  std::memcpy(&h, p, sizeof(h));
  return TraceEntry{{h.timestamp, h.pid, h.tid, h.cpu}, h.lost_before, {p + sizeof(StoredHeader), h.record_size}};
}

bool TraceBuffer::Pop(TraceEntry* out, std::vector<uint8_t>* storage) {
  while (!chunks_.empty() && chunks_.front().read == chunks_.front().used) RetireFront();
  if (chunks_.empty()) return false;
  Chunk& c = chunks_.front();
  const uint8_t* p = c.bytes.get() + c.read;
  TraceEntry e = View(p);
  storage->assign(e.record.begin(), e.record.end());
  e.record = *storage;
  *out = e;
  c.read += reinterpret_cast<const StoredHeader*>(p)->size;
  --c.count;
  --entries_;
  ++stats_.read;
  if (c.read == c.used && chunks_.size() > 1) RetireFront();
  return true;
}

std::span<const uint8_t> TraceBuffer::RunAt(size_t index) const {
  for (const Chunk& c : chunks_) {
    if (c.read == c.used) continue;
    if (index == 0) return {c.bytes.get() + c.read, c.used - c.read};
    --index;
  }
  return {};
}

void TraceBuffer::Consume(size_t bytes, size_t count) {
  while (!chunks_.empty() && chunks_.front().read == chunks_.front().used) RetireFront();
  if (chunks_.empty()) return;
  Chunk& c = chunks_.front();
  c.read += bytes;
  c.count -= count;
  entries_ -= count;
  stats_.read += count;
  if (c.read == c.used && chunks_.size() > 1) RetireFront();
}

std::unique_ptr<TraceBuffer> TraceBuffer::Copy() const {
  auto copy = std::make_unique<TraceBuffer>(capacity_);
  copy->overwrite_ = overwrite_;
  for (const Chunk& c : chunks_) {
    Chunk& to = copy->AddChunk();
    std::memcpy(to.bytes.get() + c.read, c.bytes.get() + c.read, c.used - c.read);
    to.read = c.read;
    to.used = c.used;
    to.count = c.count;
  }
  copy->entries_ = entries_;
  copy->accepted_ = accepted_;
  copy->lost_total_ = lost_total_;
  copy->never_accepted_ = never_accepted_;
  copy->pending_lost_ = pending_lost_;
  copy->stats_ = stats_;
  return copy;
}

size_t TraceBuffer::bytes() const {
  size_t total = 0;
  for (const Chunk& c : chunks_) total += c.used - c.read;
  return total;
}

uint64_t TraceBuffer::oldest_timestamp() const {
  for (const Chunk& c : chunks_) {
    if (c.read < c.used) return View(c.bytes.get() + c.read).meta.timestamp;
  }
  return 0;
}

void TraceBuffer::DropOldestChunk() {
  Chunk& dropped = chunks_.front();
  // The losses its entries carried are not forgotten with them.
  uint64_t lost = dropped.count;
  for (size_t off = dropped.read; off < dropped.used;) {
    StoredHeader h;
    std::memcpy(&h, dropped.bytes.get() + off, sizeof(h));
    lost += h.lost_before;
    off += h.size;
  }
  lost_total_ += dropped.count;
  stats_.overrun += dropped.count;
  entries_ -= dropped.count;
  RetireFront();
  // As ftrace reports overwritten events: before the oldest entry kept.
  if (!chunks_.empty() && chunks_.front().read < chunks_.front().used) {
    uint8_t* oldest = chunks_.front().bytes.get() + chunks_.front().read;
    StoredHeader h;
    std::memcpy(&h, oldest, sizeof(h));
    h.lost_before += lost;
    std::memcpy(oldest, &h, sizeof(h));
  } else {
    pending_lost_ += lost;
  }
}

TraceBuffer::Chunk& TraceBuffer::AddChunk() {
  Chunk& c = chunks_.emplace_back();
  if (spares_.empty()) {
    c.bytes = std::make_unique_for_overwrite<uint8_t[]>(kChunkBytes);
  } else {
    c.bytes = std::move(spares_.back());
    spares_.pop_back();
  }
  return c;
}

// Keeping every retired chunk never holds more than the most chunks the
// buffer ever had at once, which its capacity bounds.
void TraceBuffer::RetireFront() {
  spares_.push_back(std::move(chunks_.front().bytes));
  chunks_.pop_front();
}

void TraceBuffer::Preallocate() {
  while (chunks_.size() + spares_.size() < max_chunks()) spares_.push_back(std::make_unique<uint8_t[]>(kChunkBytes));
}

void TraceBuffer::Clear() {
  chunks_.clear();
  spares_.clear();
  entries_ = 0;
  accepted_ = 0;
  lost_total_ = 0;
  never_accepted_ = 0;
  pending_lost_ = 0;
  stats_ = {};
}

void TraceBuffer::set_capacity(size_t bytes) {
  capacity_ = std::max(bytes, kChunkBytes);
  while (chunks_.size() * kChunkBytes > capacity_) DropOldestChunk();
  spares_.resize(std::min(spares_.size(), max_chunks() - chunks_.size()));
}

}  // namespace udiag::service
