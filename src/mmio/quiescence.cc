#include "mmio/quiescence.h"

#include <sched.h>
#include <time.h>

namespace udiag::mmio {

unsigned Quiescence::Enter() {
  for (;;) {
    unsigned phase = phase_.load() & 1;
    slots_[phase].readers.fetch_add(1);
    // Re-checking the phase after counting ourselves makes the count visible
    // to any Synchronize() that flips away from this phase afterwards.
    if ((phase_.load() & 1) == phase) return phase;
    slots_[phase].readers.fetch_sub(1);
  }
}

void Quiescence::Leave(unsigned token) { slots_[token].readers.fetch_sub(1); }

void Quiescence::Synchronize() {
  // Sections that start after the flip count in the other slot and read what
  // the caller published before calling us; only the old slot must drain.
  unsigned old_phase = phase_.fetch_add(1) & 1;
  for (unsigned spins = 0; slots_[old_phase].readers.load() != 0; ++spins) {
    if (spins < 100) {
      sched_yield();
    } else {
      timespec pause{0, 50'000};
      nanosleep(&pause, nullptr);
    }
  }
}

}  // namespace udiag::mmio
