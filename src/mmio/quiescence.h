// Reader sections for the signal handlers and grace periods for the control
// path: the user-space stand-in for kmmio's RCU. Readers never block or
// allocate; Synchronize() returns once every section that could have seen
// state published before the call has ended (sections may nest, and a section
// may stay open across a single step, from SIGSEGV to SIGTRAP).
#pragma once

#include <atomic>
#include <cstdint>

namespace udiag::mmio {

class Quiescence {
 public:
  // Opens a section; pass the result to Leave(). Async-signal-safe.
  unsigned Enter();
  void Leave(unsigned token);

  // Waits for the sections open now to end. Control path only, serialized by the caller.
  void Synchronize();

 private:
  // Readers count themselves in the slot of the current phase; Synchronize
  // flips the phase and waits for the old slot to drain.
  std::atomic<unsigned> phase_{0};
  struct alignas(64) Slot {
    std::atomic<uint64_t> readers{0};
  };
  Slot slots_[2];
};

}  // namespace udiag::mmio
