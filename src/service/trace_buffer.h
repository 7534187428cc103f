// One instance's buffer of records, as ftrace's ring buffer is for a trace
// instance: bounded in bytes, discard-new when full (or overwrite-oldest),
// readable without consuming (`trace`) and consumable (`trace_pipe`). Events
// lost on the way in, here or in a producer's ring, are remembered and handed
// to readers with the next entry, so no loss is ever silent.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "ipc/record_stream_format.h"

namespace udiag::service {

struct EntryMeta {
  uint64_t timestamp = 0;  // CLOCK_MONOTONIC ns
  uint32_t pid = 0;        // process (tgid)
  uint32_t tid = 0;        // thread, the ftrace "PID" column
  uint16_t cpu = 0;
};

struct TraceEntry {
  EntryMeta meta;
  uint64_t lost_before = 0;        // events lost just before this one
  std::span<const uint8_t> record; // common header + payload
};

class TraceBuffer {
 public:
  explicit TraceBuffer(size_t capacity_bytes);

  // Appends a copy of `record`. When full: discard-new drops it and counts it
  // lost; overwrite mode drops the oldest chunk of entries instead.
  bool Append(const EntryMeta& meta, std::span<const uint8_t> record);
  // Counts events lost before reaching this buffer; `disk_behind`: in rings
  // the daemon left alone while a recording's pages waited for the disk.
  void NoteLost(uint64_t count, bool disk_behind = false) {
    stats_.lost_upstream += count;
    if (disk_behind) stats_.lost_upstream_disk_behind += count;
    never_accepted_ += count;
    CountLost(count);
  }

  // Counts events a record stream took and then had to drop (its file or
  // stream was full): the stream reports them to its reader itself, so they
  // are not attached to an entry here.
  void NoteDropped(uint64_t count) { stats_.dropped += count; }

  // Visits every entry, oldest first, without consuming.
  template <typename F>
  void ForEach(F&& visit) const;
  // Removes the oldest entry into `out` (record copied into `storage`).
  bool Pop(TraceEntry* out, std::vector<uint8_t>* storage);
  // The entries that lie back to back in memory, as stored (ipc::RecordEntry
  // each, see record_stream_format.h), in runs oldest first: RunAt(0) is the
  // oldest run; empty past the last one. Consume(bytes, count) removes a
  // prefix of RunAt(0), made of `count` whole entries.
  std::span<const uint8_t> RunAt(size_t index) const;
  void Consume(size_t bytes, size_t count);
  // A frozen copy of the entries and counters (a snapshot).
  std::unique_ptr<TraceBuffer> Copy() const;

  // Allocates (and touches) the chunks of the whole capacity now, as the
  // kernel does for a trace buffer: a reader that streams at full rate
  // should not meet a page fault per chunk while the producers start.
  void Preallocate();

  void Clear();
  void set_capacity(size_t bytes);
  size_t capacity() const { return capacity_; }
  void set_overwrite(bool overwrite) { overwrite_ = overwrite; }
  bool overwrite() const { return overwrite_; }

  size_t entries() const { return entries_; }
  // Memory the buffer holds: its chunks and the retired ones kept for reuse.
  size_t held_bytes() const { return (chunks_.size() + spares_.size()) * kChunkBytes; }
  // Entries ever accepted plus those lost on the way in: ftrace's
  // "entries-written" (overwritten entries were accepted, so count once).
  uint64_t written() const { return accepted_ + never_accepted_; }
  uint64_t lost_total() const { return lost_total_; }
  // Losses not yet attached to an entry (nothing was appended after them).
  uint64_t pending_lost() const { return pending_lost_; }
  // For consuming readers: hands over the trailing losses once reported.
  uint64_t TakePendingLost() { return std::exchange(pending_lost_, 0); }

  // Where entries went, for ftrace's per-cpu `stats` file; every loss is
  // counted in exactly one of overrun, dropped and lost_upstream.
  struct Stats {
    uint64_t overrun = 0;        // overwritten by newer entries (overwrite mode)
    uint64_t dropped = 0;        // refused: the buffer was full (discard-new) or the entry too big,
                                 // or dropped by a record stream (NoteDropped)
    uint64_t read = 0;           // consumed by trace_pipe or a record stream
    uint64_t lost_upstream = 0;  // lost in producers' rings, before reaching the buffer
    uint64_t lost_upstream_disk_behind = 0;  // of those, while the rings were left for the disk
  };
  const Stats& stats() const { return stats_; }
  // Bytes the entries held take, and the oldest one's timestamp (0: none).
  size_t bytes() const;
  // How many more records of up to `record_bytes` each Append takes before
  // the buffer is full (discard-new mode): what a drain may hand over without
  // any being dropped.
  size_t RoomFor(size_t record_bytes) const;
  uint64_t oldest_timestamp() const;

 private:
  static constexpr size_t kChunkBytes = 64 * 1024;
  struct Chunk {
    std::unique_ptr<uint8_t[]> bytes;  // kChunkBytes
    size_t used = 0;   // bytes appended
    size_t read = 0;   // bytes consumed by Pop
    size_t count = 0;  // entries not consumed
  };
  using StoredHeader = ipc::RecordEntry;
  static TraceEntry View(const uint8_t* p);
  void DropOldestChunk();
  // Chunks come and go at the buffer's rate. Retired ones are kept for reuse
  // (never more than the capacity in all, like the kernel's ring buffer keeps
  // its pages): memory handed back to the kernel costs a page fault per 4 KiB
  // when it comes back, which dominated a streaming daemon's profile.
  Chunk& AddChunk();
  void RetireFront();
  size_t max_chunks() const { return capacity_ / kChunkBytes; }
  void Refuse() {
    ++stats_.dropped;
    ++never_accepted_;
    CountLost(1);
  }
  void CountLost(uint64_t count) {
    pending_lost_ += count;
    lost_total_ += count;
  }

  size_t capacity_;
  bool overwrite_ = false;
  std::deque<Chunk> chunks_;
  std::vector<std::unique_ptr<uint8_t[]>> spares_;
  size_t entries_ = 0;
  uint64_t accepted_ = 0;
  uint64_t lost_total_ = 0;
  uint64_t never_accepted_ = 0;
  uint64_t pending_lost_ = 0;
  Stats stats_;
};

template <typename F>
void TraceBuffer::ForEach(F&& visit) const {
  for (const Chunk& c : chunks_) {
    for (size_t off = c.read; off < c.used;) {
      const uint8_t* p = c.bytes.get() + off;
      visit(View(p));
      off += reinterpret_cast<const StoredHeader*>(p)->size;
    }
  }
}

}  // namespace udiag::service
