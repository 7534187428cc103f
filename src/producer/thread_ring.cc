#include "producer/thread_ring.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

namespace udiag::producer {

thread_local ThreadRing t_ring __attribute__((tls_model("initial-exec")));

namespace {

void Unmap(ring::RingMapping& m) {
  if (m.base) munmap(m.base, m.bytes);
  m.base = nullptr;
}

// Thread exit: tell the daemon this ring is finished. A ring from before a
// fork belongs to the parent's thread and is left alone.
void OnThreadExit(void*) {
  if (t_ring.mapping.base && t_ring.generation == g_fast.ring_generation.load()) t_ring.writer.MarkClosed();
  Unmap(t_ring.mapping);
  t_ring.generation = 0;
}

pthread_key_t ExitKey() {
  static pthread_key_t key = [] {
    pthread_key_t k;
    pthread_key_create(&k, &OnThreadExit);
    return k;
  }();
  return key;
}

}  // namespace

bool RenewThreadRing() {
  uint32_t generation = g_fast.ring_generation.load(std::memory_order_acquire);
  // After a fork the old ring is the parent's; after a reconnect it belongs
  // to a daemon that is gone. Either way this thread stops using it.
  Unmap(t_ring.mapping);
  t_ring.writer = ring::RingWriter();
  Client* client = Client::Get();
  if (!client) return false;
  ring::RingMapping m;
  auto clock = static_cast<ring::ClockDomain>(g_fast.clock.load());
  if (ring::CreateRing(g_fast.ring_bytes.load(), gettid(), clock, &m) != 0) return false;
  // Called, not posted: the reply comes once the daemon has mapped the ring
  // and set its full_wait_ms, so a --block recording's first records wait
  // instead of being dropped. The call is bounded by UDIAG_TIMEOUT_MS.
  Reply reply;
  int fds[] = {m.fd};
  int err = client->Call(ipc::MsgType::kAddRing, nullptr, fds, &reply);
  close(m.fd);
  m.fd = -1;
  if (err || reply.error) {
    Unmap(m);
    return false;
  }
  t_ring.mapping = m;
  t_ring.writer.Attach(m.base);
  t_ring.generation = generation;
  pthread_setspecific(ExitKey(), &t_ring);  // non-null so OnThreadExit runs
  return true;
}

}  // namespace udiag::producer
