#include "producer/thread_ring.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/tsc.h"
#include "ring/page_event.h"

namespace udiag::producer {

constinit thread_local ThreadRing t_ring __attribute__((tls_model("initial-exec")));

// The daemon's answer to a ring the thread began writing into before it
// came: the agent thread stores it, the writing thread reads it as it opens
// a page. Each holds a reference; the last to let go frees it.
struct RingVerdict {
  static constexpr int kUnanswered = 0, kTaken = 1, kRefused = 2;
  std::atomic<int> answer{kUnanswered};
  std::atomic<int> holders{2};
  void Release() {
    if (holders.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
};

namespace {

constexpr uint64_t kRingRetryNs = 100'000'000;
constexpr int kRingAckWaitMs = 20;

void Unmap(ring::RingMapping& m) {
  if (m.base) munmap(m.base, m.bytes);
  m.base = nullptr;
}

bool IsThreadsRing(const HeldRing& ring) { return ring.mapping.base == t_ring.mapping.base; }

// Done holding `ring`: unmapped unless the thread writes there.
void Settle(HeldRing& ring) {
  if (ring.verdict) ring.verdict->Release();
  if (!IsThreadsRing(ring)) Unmap(ring.mapping);
}

// The thread no longer cares what the daemon does with its rings: it
// exits, or its rings are its parent's (fork) or a dead daemon's
// (reconnect, once their losses are taken).
void ForgetHeldRings() {
  for (uint32_t i = 0; i < t_ring.held_count; ++i) Settle(t_ring.held[i]);
  t_ring.held_count = 0;
}

// Thread exit: tell the daemon this ring is finished. A ring from before a
// fork belongs to the parent's thread and is left alone.
void OnThreadExit(void*) {
  ForgetHeldRings();
  delete[] std::exchange(t_ring.held, nullptr);
  if (t_ring.mapping.base && t_ring.generation == g_fast.ring_generation.load()) ThreadWriter().MarkClosed();
  Unmap(t_ring.mapping);
  t_ring.generation = 0;
}

// Events this thread committed to a ring that its daemon never read: the
// ring is ours, but still checked as if it were not (sizes bound the walk).
uint64_t UndrainedRecords(const ring::RingMapping& m) {
  const auto* header = static_cast<const ring::RingHeader*>(m.base);
  const uint8_t* data = static_cast<const uint8_t*>(m.base) + ring::kHeaderBytes;
  const uint64_t size = header->data_size;
  const uint64_t head = header->head.load(std::memory_order_acquire);
  uint64_t tail = header->tail.load(std::memory_order_acquire);
  if (tail > head || head - tail > size) return 0;
  uint64_t records = 0;
  while (tail < head) {
    const uint64_t page_start = tail - tail % ring::kRingPageSize;
    const uint8_t* page = data + (page_start & (size - 1));
    uint64_t end = head;
    if (head - page_start >= ring::kRingPageSize) {  // closed: its commit says where its events end
      uint64_t commit;
      std::memcpy(&commit, page + offsetof(ring::PageHeader, commit), sizeof(commit));
      end = page_start + sizeof(ring::PageHeader) + std::min<uint64_t>(static_cast<uint32_t>(commit), ring::kPageDataBytes);
    }
    tail = std::max<uint64_t>(tail, page_start + sizeof(ring::PageHeader));
    ring::PageEvent event;
    while (tail < end && ring::DecodePageEvent(data + (tail & (size - 1)), end - tail, &event)) {
      tail += event.bytes;
      if (event.data_bytes != 0) ++records;
    }
    tail = page_start + ring::kRingPageSize;
  }
  return records;
}

// What a daemon that is gone, or refused ring `m`, lost of it: the events
// it never drained, and the drops it never took into its trace.
uint64_t LostWithDaemon(const ring::RingMapping& m) {
  const auto* header = static_cast<const ring::RingHeader*>(m.base);
  const uint64_t dropped = header->lost.load(std::memory_order_relaxed);
  const uint64_t taken = header->lost_taken.load(std::memory_order_relaxed);
  return UndrainedRecords(m) + (dropped > taken ? dropped - taken : 0);
}

// Whether the daemon has read all of ring `m`, which its thread no longer
// writes: its events, and its count of dropped writes.
bool Drained(const ring::RingMapping& m) {
  const auto* header = static_cast<const ring::RingHeader*>(m.base);
  return header->tail.load(std::memory_order_acquire) == header->head.load(std::memory_order_relaxed) &&
         header->lost_taken.load(std::memory_order_relaxed) >= header->lost.load(std::memory_order_relaxed);
}

// Losses of the time without a daemon, which this thread's new ring reports:
// with them, when a daemon died, what it lost of this thread's rings (the
// current one, and those it outgrew that the daemon never answered for or
// never drained).
uint64_t TakeDisconnectedLosses() {
  uint64_t lost = g_lost_while_disconnected.exchange(0, std::memory_order_relaxed);
  if (t_ring.epoch == g_fast.epoch.load() || t_ring.owner != getpid()) return lost;
  if (t_ring.mapping.base) lost += LostWithDaemon(t_ring.mapping);
  for (uint32_t i = 0; i < t_ring.held_count; ++i) {
    if (!IsThreadsRing(t_ring.held[i])) lost += LostWithDaemon(t_ring.held[i].mapping);
  }
  return lost;
}

pthread_key_t ExitKey() {
  static pthread_key_t key = [] {
    pthread_key_t k;
    pthread_key_create(&k, &OnThreadExit);
    return k;
  }();
  return key;
}

// A new ring of `data_size` bytes for this thread, handed to `client`'s
// daemon; a null base when either step failed (`refused`: the daemon said
// no). `lost` is its first lost count. The daemon sets full_wait_ms when
// it maps the ring; until then the ring waits for room as long as a
// recording that holds back (--block) asks, which the daemon's policy
// words say.
//
// The reply comes once the daemon has mapped the ring. A daemon that does
// not answer within kRingAckWaitMs (stopped, swamped) maps the ring when it
// gets to it: the write goes on meanwhile, held up only by a full ring under
// a --block recording, as a mapped ring would be. Its answer then comes
// through `*unanswered` (else null): a daemon that refuses the ring late
// never reads what the thread wrote there (TakeLateAnswers).
ring::RingMapping HandOverNewRing(Client* client, uint32_t data_size, uint64_t lost, bool* refused,
                                  RingVerdict** unanswered) {
  *refused = false;
  *unanswered = nullptr;
  ring::RingMapping m{-1, nullptr, 0};
  auto clock = static_cast<ring::ClockDomain>(g_fast.clock.load());
  if (ring::CreateRing(data_size, gettid(), clock, &m) != 0) return {-1, nullptr, 0};
  auto* header = static_cast<ring::RingHeader*>(m.base);
  header->lost.store(lost, std::memory_order_relaxed);
  const ipc::ProducerPolicy* policy = g_policy.load();
  header->full_wait_ms.store(policy ? policy->ring_full_wait_ms.load(std::memory_order_relaxed) : 0,
                             std::memory_order_relaxed);
  Reply reply;
  int fds[] = {m.fd};
  auto* verdict = new RingVerdict;
  int err =
      client->Call(ipc::MsgType::kAddRing, nullptr, fds, &reply, {}, kRingAckWaitMs, [verdict](int error) {
        // ENOTCONN: the daemon went away, and the next one hears of the ring's
        // events from TakeDisconnectedLosses.
        verdict->answer.store(error != 0 && error != ENOTCONN ? RingVerdict::kRefused : RingVerdict::kTaken,
                              std::memory_order_release);
        verdict->Release();
      });
  close(m.fd);
  m.fd = -1;
  if (err == ETIMEDOUT) {
    err = 0;
    *unanswered = verdict;
  } else {
    delete verdict;  // the agent never had it
  }
  if (err || reply.error) {
    Unmap(m);
    *refused = reply.error != 0;
    return {-1, nullptr, 0};
  }
  return m;
}

// Holds `m` until SettleHeldRings lets it go; room is left by the caller.
void Hold(const ring::RingMapping& m, RingVerdict* verdict) {
  if (!t_ring.held) t_ring.held = new HeldRing[ThreadRing::kMaxHeld];
  t_ring.held[t_ring.held_count++] = {m, verdict};
}

// Makes `m` the thread's ring, the daemon's answer still to come when
// `unanswered` is not null.
void UseRing(const ring::RingMapping& m, RingVerdict* unanswered) {
  // Room: GrowThreadRing leaves it, and a ring renewed without a fork or
  // reconnect replaces one refused late, whose place is free again.
  if (unanswered) Hold(m, unanswered);
  t_ring.mapping = m;
  ThreadWriter() = ring::RingWriter();
  ThreadWriter().Attach(m.base);
}

}  // namespace

bool RenewThreadRing() {
  if (t_ring.retry_after_ns != 0 && base::MonotonicNs() < t_ring.retry_after_ns) return false;
  uint32_t generation = g_fast.ring_generation.load(std::memory_order_acquire);
  uint32_t epoch = g_fast.epoch.load();
  Client* client = Client::Get();
  if (!client) return false;
  // After a fork the old ring is the parent's; after a reconnect it belongs
  // to a daemon that is gone. Either way this thread stops using it.
  const uint64_t lost = TakeDisconnectedLosses();
  // A ring refused late is renewed here too; its elders may still be
  // answered.
  if (t_ring.owner != getpid() || t_ring.epoch != epoch) ForgetHeldRings();
  Unmap(t_ring.mapping);
  ThreadWriter() = ring::RingWriter();
  bool refused;
  RingVerdict* unanswered;
  ring::RingMapping m = HandOverNewRing(client, g_fast.ring_bytes.load(), lost, &refused, &unanswered);
  if (!m.base) {
    if (refused) t_ring.retry_after_ns = base::MonotonicNs() + kRingRetryNs;
    g_lost_while_disconnected.fetch_add(lost, std::memory_order_relaxed);  // the next ring tells
    return false;
  }
  t_ring.retry_after_ns = 0;
  UseRing(m, unanswered);
  t_ring.last_event = RememberedEvent();
  std::fill(std::begin(t_ring.remembered), std::end(t_ring.remembered), RememberedEvent());
  t_ring.generation = generation;
  t_ring.epoch = epoch;
  t_ring.owner = getpid();
  pthread_setspecific(ExitKey(), &t_ring);  // non-null so OnThreadExit runs
  return true;
}

bool GrowThreadRing() {
  const uint64_t size = ThreadWriter().data_size();
  const uint64_t max = g_fast.ring_max_bytes.load(std::memory_order_relaxed);
  // A ring due to be renewed anyway (fork, reconnect) is left to that. Room
  // for two held rings: the old one and, unanswered, the new one.
  if (size >= max || t_ring.generation != g_fast.ring_generation.load() ||
      t_ring.held_count + 2 > ThreadRing::kMaxHeld) {
    return false;
  }
  const uint64_t now = base::MonotonicNs();
  if (now < t_ring.grow_after_ns) return false;
  Client* client = Client::Get();
  if (!client) return false;
  bool refused;
  RingVerdict* unanswered;
  ring::RingMapping m =
      HandOverNewRing(client, static_cast<uint32_t>(std::min(size * 4, max)), 0, &refused, &unanswered);
  if (!m.base) {
    t_ring.grow_after_ns = now + kRingRetryNs;
    return false;
  }
  // The daemon drains what is left in the old ring before the new one; the
  // old ring stays mapped until it has (SettleHeldRings). One not answered
  // for yet is held already.
  ThreadWriter().MarkClosed();
  if (std::none_of(t_ring.held, t_ring.held + t_ring.held_count, IsThreadsRing))
    Hold(t_ring.mapping, nullptr);
  UseRing(m, unanswered);
  return true;
}

bool SettleHeldRings() {
  bool dropped = false;
  for (uint32_t i = 0; i < t_ring.held_count;) {
    HeldRing& entry = t_ring.held[i];
    const int answer =
        entry.verdict ? entry.verdict->answer.load(std::memory_order_acquire) : RingVerdict::kTaken;
    if (answer == RingVerdict::kRefused) {
      // Its events, and what it dropped and carried as lost (its lost
      // count, none of which a daemon that refused the ring took).
      g_lost_while_disconnected.fetch_add(LostWithDaemon(entry.mapping), std::memory_order_relaxed);
      if (IsThreadsRing(entry)) {
        ThreadWriter() = ring::RingWriter();
        t_ring.mapping.base = nullptr;  // no longer the thread's: Settle unmaps it
        t_ring.generation = 0;          // the thread's next write asks for a ring again, after the delay
        t_ring.retry_after_ns = base::MonotonicNs() + kRingRetryNs;
        dropped = true;
      }
    } else if (answer == RingVerdict::kUnanswered || (!IsThreadsRing(entry) && !Drained(entry.mapping))) {
      ++i;
      continue;
    }
    Settle(entry);
    entry = t_ring.held[--t_ring.held_count];
  }
  return dropped;
}

}  // namespace udiag::producer
