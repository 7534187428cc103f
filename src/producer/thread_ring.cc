#include "producer/thread_ring.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/tsc.h"
#include "ring/page_event.h"

namespace udiag::producer {

constinit thread_local ThreadRing t_ring __attribute__((tls_model("initial-exec")));

namespace {

constexpr uint64_t kRingRetryNs = 100'000'000;
constexpr int kRingAckWaitMs = 20;

void Unmap(ring::RingMapping& m) {
  if (m.base) munmap(m.base, m.bytes);
  m.base = nullptr;
}

// Thread exit: tell the daemon this ring is finished. A ring from before a
// fork belongs to the parent's thread and is left alone.
void OnThreadExit(void*) {
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

// Losses of the time without a daemon, which this thread's new ring reports.
uint64_t TakeDisconnectedLosses() {
  uint64_t lost = g_lost_while_disconnected.exchange(0, std::memory_order_relaxed);
  bool orphaned = t_ring.mapping.base && t_ring.epoch != g_fast.epoch.load() && t_ring.owner == getpid();
  return orphaned ? lost + UndrainedRecords(t_ring.mapping) : lost;
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
// a --block recording, as a mapped ring would be.
ring::RingMapping HandOverNewRing(Client* client, uint32_t data_size, uint64_t lost, bool* refused) {
  *refused = false;
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
  int err = client->Call(ipc::MsgType::kAddRing, nullptr, fds, &reply, {}, kRingAckWaitMs);
  close(m.fd);
  m.fd = -1;
  if (err == ETIMEDOUT) err = 0;
  if (err || reply.error) {
    Unmap(m);
    *refused = reply.error != 0;
    return {-1, nullptr, 0};
  }
  return m;
}

void UseRing(const ring::RingMapping& m) {
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
  Unmap(t_ring.mapping);
  ThreadWriter() = ring::RingWriter();
  bool refused;
  ring::RingMapping m = HandOverNewRing(client, g_fast.ring_bytes.load(), lost, &refused);
  if (!m.base) {
    if (refused) t_ring.retry_after_ns = base::MonotonicNs() + kRingRetryNs;
    g_lost_while_disconnected.fetch_add(lost, std::memory_order_relaxed);  // the next ring tells
    return false;
  }
  t_ring.retry_after_ns = 0;
  UseRing(m);
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
  // A ring due to be renewed anyway (fork, reconnect) is left to that.
  if (size >= max || t_ring.generation != g_fast.ring_generation.load()) return false;
  const uint64_t now = base::MonotonicNs();
  if (now < t_ring.grow_after_ns) return false;
  Client* client = Client::Get();
  if (!client) return false;
  bool refused;
  ring::RingMapping m = HandOverNewRing(client, static_cast<uint32_t>(std::min(size * 4, max)), 0, &refused);
  if (!m.base) {
    t_ring.grow_after_ns = now + kRingRetryNs;
    return false;
  }
  // The daemon drains what is left in the old ring before the new one.
  ThreadWriter().MarkClosed();
  Unmap(t_ring.mapping);
  UseRing(m);
  return true;
}

}  // namespace udiag::producer
