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
  // How long a thread whose ring is full waits for the drainer before it
  // drops. The drainer runs every few milliseconds; waiting this long means
  // it was starved of CPU, and a traced access already costs microseconds.
  // Half the session's merge lag (Session::kMergeLag): a record that waited
  // still reaches the session in time to be written in order.
  static constexpr long kFullWaitNs = 100'000'000;

  explicit ThreadRings(long full_wait_ns = kFullWaitNs) : full_wait_ns_(full_wait_ns) {}

  // Queues `record` on the calling thread's ring, claiming a free ring on
  // the thread's first push. A full ring makes the thread wait while a
  // drainer runs (up to full_wait_ns, and not again until the drainer has
  // taken something). Drops and counts the record when the ring stays full,
  // no ring is free, or the thread is already inside Push() (a signal
  // handler interrupted it). Async-signal-safe.
  void Push(const Record& record);

  // Whether a drainer is running that will make room in a full ring; while
  // none is, a full ring drops at once.
  void SetDrainerRunning(bool running) { drainer_running_.store(running, std::memory_order_release); }

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
    // The tail at which the owner last gave up waiting (owner only): while
    // the drainer has not moved it, a full ring drops without waiting.
    uint64_t gave_up_at_tail = UINT64_MAX;
    // Raw storage: constructing kSlots * kSlotRecords records would touch
    // every page of a pool that threads mostly never use.
    alignas(Record) unsigned char records[kSlotRecords * sizeof(Record)];
    Record* at(uint64_t index) { return reinterpret_cast<Record*>(records) + index % kSlotRecords; }
  };

  Slot* SlotOfThisThread();
  // Whether the full `slot` got room for the record at `head`.
  bool WaitForRoom(Slot* slot, uint64_t head);

  const long full_wait_ns_;
  Slot slots_[kSlots];
  std::atomic<uint64_t> lost_{0};
  std::atomic<bool> drainer_running_{false};
};

}  // namespace udiag::mmiotrace
