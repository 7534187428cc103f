#include "mmio/snapshot.h"

#include <algorithm>

namespace udiag::mmio {

PageState* Snapshot::FindPage(uintptr_t addr) const {
  const uintptr_t page = PageOf(addr);
  auto it = std::lower_bound(pages.begin(), pages.end(), page,
                             [](const PageState* p, uintptr_t value) { return p->page < value; });
  return it != pages.end() && (*it)->page == page ? *it : nullptr;
}

size_t Snapshot::FindProbes(uintptr_t addr, size_t len, udiag_mmio_probe** out, size_t max) const {
  const uintptr_t end = addr + (len == 0 ? 1 : len);
  // The first span that ends after addr; spans are disjoint, so ends are sorted too.
  auto it = std::upper_bound(probes.begin(), probes.end(), addr,
                             [](uintptr_t value, const ProbeSpan& s) { return value < s.end; });
  size_t count = 0;
  for (; it != probes.end() && it->begin < end && count < max; ++it) out[count++] = it->probe;
  return count;
}

uint8_t* Snapshot::Translate(uintptr_t addr, size_t len) const {
  const uintptr_t end = addr + (len == 0 ? 1 : len);
  uint8_t* first = nullptr;
  for (uintptr_t page = PageOf(addr); page < end; page += kPageSize) {
    const PageState* state = FindPage(page);
    uint8_t* view = state == nullptr ? reinterpret_cast<uint8_t*>(page) : state->alias;
    if (view == nullptr) return nullptr;
    if (first == nullptr) {
      first = view + (addr - page);
    } else if (view != first + (page - addr)) {
      return nullptr;
    }
  }
  return first;
}

}  // namespace udiag::mmio
