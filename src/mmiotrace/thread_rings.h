// Where the hooks queue records: a fixed pool of single-producer rings, one
// per thread that has traced something. Push() is async-signal-safe and
// lock-free (it runs in the probe handlers); a single drainer (the writer
// thread) takes records out. Nothing is allocated after construction.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "mmiotrace/record.h"

namespace udiag::mmiotrace {

class ThreadRings {
 public:
  static constexpr size_t kSlots = 64;           // threads tracing at once
  static constexpr size_t kSlotRecords = 2048;   // per thread

  // Queues `record` on the calling thread's ring, claiming a free ring on
  // the thread's first push. Drops and counts it when the ring is full, no
  // ring is free, or the thread is already inside Push() (a signal handler
  // interrupted it). Async-signal-safe.
  void Push(const Record& record);

  // Appends every queued record to `out` (each thread's in order) and
  // releases the rings of threads that have exited. Returns the number of
  // records dropped since the last call. One drainer at a time.
  uint64_t Drain(std::vector<Record>* out);

  // In the child of fork(): the parent's queued records are the parent's to
  // send, and its other threads do not exist here. Empties every ring and
  // keeps only the calling thread's, now owned by its new tid.
  void ResetInForkChild();

 private:
  struct Slot {
    std::atomic<pid_t> owner{0};  // tid; 0 = free
    std::atomic<uint64_t> head{0};  // next record to write (producer)
    std::atomic<uint64_t> tail{0};  // next record to read (drainer)
    // Raw storage: constructing kSlots * kSlotRecords records would touch
    // every page of a pool that threads mostly never use.
    alignas(Record) unsigned char records[kSlotRecords * sizeof(Record)];
    Record* at(uint64_t index) { return reinterpret_cast<Record*>(records) + index % kSlotRecords; }
  };

  Slot* SlotOfThisThread();

  Slot slots_[kSlots];
  std::atomic<uint64_t> lost_{0};
};

}  // namespace udiag::mmiotrace
