#include "producer/thread_ring.h"

#include <sys/mman.h>
#include <unistd.h>

namespace udiag::producer {
namespace {

void Unmap(ring::RingMapping& m) {
  if (m.base) munmap(m.base, m.bytes);
  m.base = nullptr;
}

}  // namespace

ThreadRing::~ThreadRing() {
  // A ring from before a fork belongs to the parent's thread: leave it be.
  if (mapping.base && generation == g_fast.ring_generation.load()) writer.MarkClosed();
  Unmap(mapping);
}

bool RenewThreadRing() {
  uint32_t generation = g_fast.ring_generation.load(std::memory_order_acquire);
  if (t_ring.mapping.base && t_ring.generation != 0) {
    // Same process and daemon as before (a reconnect): tell the old daemon-side
    // reader we are done; after a fork the old ring is the parent's.
    Unmap(t_ring.mapping);
  }
  t_ring.writer = ring::RingWriter();
  Client* client = Client::Get();
  if (!client) return false;
  ring::RingMapping m;
  auto clock = static_cast<ring::ClockDomain>(g_fast.clock.load());
  if (ring::CreateRing(g_fast.ring_bytes.load(), gettid(), clock, &m) != 0) return false;
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
  return true;
}

}  // namespace udiag::producer
