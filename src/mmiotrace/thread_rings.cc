#include "mmiotrace/thread_rings.h"

#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace udiag::mmiotrace {
namespace {

// Per-thread state must never be allocated lazily inside a signal handler.
// Keyed by the pool, so that several pools (tests) do not share a slot.
struct ThreadState {
  const void* pool = nullptr;
  void* slot = nullptr;
  bool in_push = false;
};
thread_local ThreadState tls_state __attribute__((tls_model("initial-exec")));

pid_t ThisTid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

bool ThreadExited(pid_t tid) {
  return syscall(SYS_tgkill, getpid(), tid, 0) != 0 && errno == ESRCH;
}

long NsSince(const timespec& start) {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - start.tv_sec) * 1'000'000'000L + (now.tv_nsec - start.tv_nsec);
}

}  // namespace

ThreadRings::Slot* ThreadRings::SlotOfThisThread() {
  if (tls_state.pool == this) return static_cast<Slot*>(tls_state.slot);
  pid_t tid = ThisTid();
  for (Slot& slot : slots_) {
    pid_t expected = 0;
    if (slot.owner.compare_exchange_strong(expected, tid, std::memory_order_acq_rel)) {
      tls_state.pool = this;
      tls_state.slot = &slot;
      return &slot;
    }
  }
  return nullptr;
}

void ThreadRings::Push(const Record& record) {
  if (tls_state.in_push) {
    lost_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  tls_state.in_push = true;
  Slot* slot = SlotOfThisThread();
  if (slot == nullptr) {
    lost_.fetch_add(1, std::memory_order_relaxed);
  } else {
    uint64_t head = slot->head.load(std::memory_order_relaxed);
    if (head - slot->tail.load(std::memory_order_acquire) >= kSlotRecords && !WaitForRoom(slot, head)) {
      lost_.fetch_add(1, std::memory_order_relaxed);
    } else {
      std::memcpy(slot->at(head), &record, sizeof(record));
      slot->head.store(head + 1, std::memory_order_release);
    }
  }
  tls_state.in_push = false;
}

bool ThreadRings::WaitForRoom(Slot* slot, uint64_t head) {
  constexpr timespec kPoll{0, 50'000};
  uint64_t tail = slot->tail.load(std::memory_order_acquire);
  if (tail == slot->gave_up_at_tail) return false;
  timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (drainer_running_.load(std::memory_order_acquire)) {
    if (NsSince(start) >= full_wait_ns_) {
      slot->gave_up_at_tail = tail;
      return false;
    }
    nanosleep(&kPoll, nullptr);
    if (head - slot->tail.load(std::memory_order_acquire) < kSlotRecords) return true;
  }
  return false;
}

uint64_t ThreadRings::Drain(std::vector<Record>* out) {
  for (Slot& slot : slots_) {
    pid_t owner = slot.owner.load(std::memory_order_acquire);
    if (owner == 0) continue;
    // Read "exited" before the records: whatever it pushed is then visible.
    bool exited = ThreadExited(owner);
    uint64_t tail = slot.tail.load(std::memory_order_relaxed);
    uint64_t head = slot.head.load(std::memory_order_acquire);
    for (; tail != head; ++tail) out->push_back(*slot.at(tail));
    slot.tail.store(tail, std::memory_order_release);
    if (exited) slot.owner.store(0, std::memory_order_release);
  }
  return lost_.exchange(0, std::memory_order_relaxed);
}

void ThreadRings::ResetInForkChild() {
  Slot* mine = tls_state.pool == this ? static_cast<Slot*>(tls_state.slot) : nullptr;
  for (Slot& slot : slots_) {
    slot.tail.store(slot.head.load(std::memory_order_relaxed), std::memory_order_relaxed);
    slot.owner.store(&slot == mine ? ThisTid() : 0, std::memory_order_release);
  }
  lost_.store(0, std::memory_order_relaxed);
}

}  // namespace udiag::mmiotrace
