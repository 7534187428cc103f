// Each producer thread's ring, created on its first enabled write and handed
// to the daemon; marked closed when the thread exits so the daemon frees it
// once drained. A thread that writes faster than the daemon drains it (its
// ring overflowed) moves to a larger ring. A fork or a reconnect bumps the
// ring generation, and each thread then makes a fresh ring instead of
// writing into its parent's.
// The first ring after a daemon restart carries, as its lost count, the
// writes refused while there was no daemon and the records the old daemon
// never drained; a thread's next ring, the records of a ring the daemon
// refused after the thread began writing into it.
#pragma once

#include <sys/types.h>

#include "producer/client.h"
#include "ring/ring_writer.h"
#include "schema/loc_check.h"

namespace udiag::producer {

// What the thread's last write of an event through the general path found
// the event to be, so that writing it again skips the lookups
// (write_path.cc). It holds copies, and a pointer into the status page
// (which stays mapped, even once its daemon is gone), and is valid while
// the data file table's generation is the one it was filled under; a new
// ring (fork, reconnect: both bump the ring generation after every other
// change) starts it afresh.
struct RememberedEvent {
  uint64_t files_generation = UINT64_MAX;  // none: the table never gets there
  const uint8_t* status = nullptr;         // the event's byte in the status page
  int fd = -1;
  int32_t index = -1;  // -1: nothing remembered
  uint32_t id = 0;
  uint32_t min_size = 0;
  // Its __data_loc and __rel_loc words: the slot's own, which never
  // changes once published and lives as long as its file's mirror.
  const schema::LocCheck* locs = nullptr;
  uint32_t loc_count = 0;
};

// Whether the daemon took a ring the thread began writing into before the
// daemon answered (thread_ring.cc).
struct RingVerdict;

// A ring the thread keeps mapped for its daemon's sake: the daemon has not
// answered for it yet (the thread's ring, or one it since outgrew), or the
// thread outgrew it and the daemon has not drained it yet. Should the
// daemon die meanwhile, the thread still reads what it left undrained and
// tells the next daemon (TakeDisconnectedLosses).
struct HeldRing {
  ring::RingMapping mapping{-1, nullptr, 0};
  RingVerdict* verdict = nullptr;  // null once the daemon took the ring
};

// Plain data with constant initialisation, in the initial-exec TLS model:
// the write path reaches it with one %fs-relative access, no __tls_get_addr
// and no lazy-init wrapper. Thread exit is handled by a pthread key.
struct ThreadRing {
  ring::RingWriter writer;
  ring::RingMapping mapping{-1, nullptr, 0};
  uint32_t generation = 0;
  uint32_t epoch = 0;  // the daemon connection the ring was given to
  pid_t owner = 0;     // the process that made it (not a forked child)
  // After the daemon refused a ring (a per-user limit), no new one is asked
  // for before this CLOCK_MONOTONIC time: the writes meanwhile fail at once
  // instead of each making a round trip to the daemon.
  uint64_t retry_after_ns = 0;
  // Likewise for a larger ring after one could not be made or was refused.
  uint64_t grow_after_ns = 0;
  // The event of the thread's last write through the general path, where
  // the write of one event again and again finds it at once.
  RememberedEvent last_event;
  // The same and a few more, each in the slot of its descriptor and write
  // index (RememberedSlot), so that a program writing several in turn finds
  // each remembered; one written in another's slot takes its place.
  static constexpr uint32_t kRememberedEvents = 4;
  RememberedEvent remembered[kRememberedEvents];
  // The rings the daemon has not answered for or, once outgrown, drained
  // (HeldRing): the thread stopped waiting for an answer (HandOverNewRing),
  // or moved on to a larger ring. A thread that outgrows its rings while its
  // daemon is stopped holds one per ring size. On the heap, made when first
  // needed: static TLS, which a dlopen'ed libudiag takes from glibc's small
  // reserve, stays small.
  static constexpr uint32_t kMaxHeld = 8;
  HeldRing* held = nullptr;
  uint32_t held_count = 0;
};

extern constinit thread_local ThreadRing t_ring __attribute__((tls_model("initial-exec")));

// Creates this thread's ring for the current generation; false on failure
// (and, after a refusal, without asking again for kRingRetryNs).
[[gnu::cold]] bool RenewThreadRing();

// After this thread's ring overflowed: moves the thread to a ring four
// times as large, up to the daemon's ring_max_bytes, and closes the old one
// (the daemon drains it first), held until it is drained. Keeps the old
// ring when no larger one can be made or the daemon refuses it (a per-user
// limit), and tries again only after kRingRetryNs. True when the thread's
// ring (the same RingWriter) is a new one.
[[gnu::cold, gnu::noinline]] bool GrowThreadRing();

// Settles the thread's held rings: one the daemon refused never had its
// events read, so they are counted lost (the thread's next ring reports
// them) and it is unmapped, and if it is the thread's ring, the thread asks
// for a new one after a while (true: that happened); an outgrown ring the
// daemon took is unmapped once it has drained it. For a thread with held
// rings, as it opens a page.
[[gnu::cold, gnu::noinline]] bool SettleHeldRings();

// This thread's ring writer, through a pointer the compiler cannot tell is
// a thread-local address: GCC 12 under -fsanitize=null (our ASan+UBSan
// build, -O1) checks `this` of a member call on such an address with a
// branch on flags no instruction set, and so reported a null writer where
// there was none. Costs at most the address in a register.
inline ring::RingWriter& ThreadWriter() {
  ring::RingWriter* writer = &t_ring.writer;
  asm("" : "+r"(writer));
  return *writer;
}

// Where the event of write index `index` on `fd` is remembered.
inline RememberedEvent& RememberedSlot(int fd, int32_t index) {
  return t_ring.remembered[static_cast<uint32_t>(index ^ fd) % ThreadRing::kRememberedEvents];
}

inline ring::RingWriter* CurrentThreadRing() {
  if (t_ring.generation == g_fast.ring_generation.load(std::memory_order_relaxed)) [[likely]] {
    return &ThreadWriter();
  }
  return RenewThreadRing() ? &ThreadWriter() : nullptr;
}

}  // namespace udiag::producer
