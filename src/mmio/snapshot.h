// The immutable view of the registry that the signal handlers read: probes and
// armed pages, sorted for binary search. A snapshot is built and published by
// the control path and freed only after a grace period (quiescence.h), so a
// handler may use it for as long as its reader section lasts. Lookups are
// async-signal-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "udiag/mmio.h"

namespace udiag::mmio {

inline constexpr uintptr_t kPageSize = 4096;
inline uintptr_t PageOf(uintptr_t addr) { return addr & ~(kPageSize - 1); }

// One armed page. Shared by the snapshots published while the page has probes;
// the counters are the only state handlers change.
struct PageState {
  uintptr_t page = 0;
  int original_prot = 0;
  uint8_t* alias = nullptr;           // the page in its alias view, or nullptr
  std::atomic<int> open_count{0};     // design A: threads stepping on the open page
  std::atomic<bool> armed{true};      // false once its last probe left
};

struct ProbeSpan {
  uintptr_t begin;
  uintptr_t end;
  udiag_mmio_probe* probe;
};

struct Snapshot {
  udiag_mmio_mode mode = UDIAG_MMIO_EMULATE;
  std::vector<ProbeSpan> probes;    // sorted by begin, disjoint
  std::vector<PageState*> pages;    // sorted by page

  PageState* FindPage(uintptr_t addr) const;
  // Stores up to `max` probes overlapping [addr, addr+len) in `out`; returns how many.
  size_t FindProbes(uintptr_t addr, size_t len, udiag_mmio_probe** out, size_t max) const;
  // The never-protected view of [addr, addr+len): the alias for probed pages,
  // the address itself for other memory; nullptr when a probed page has no
  // alias or the views are not contiguous.
  uint8_t* Translate(uintptr_t addr, size_t len) const;
};

}  // namespace udiag::mmio
