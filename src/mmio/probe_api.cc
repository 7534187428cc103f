// The C API of include/udiag/mmio.h over the registry.
#include "mmio/alt_stack.h"
#include "mmio/registry.h"
#include "udiag/mmio.h"

using udiag::mmio::Registry;

extern "C" {

int udiag_mmio_set_mode(enum udiag_mmio_mode mode) { return Registry::Get().SetMode(mode); }

enum udiag_mmio_mode udiag_mmio_get_mode(void) { return Registry::Get().mode(); }

int udiag_mmio_register_region(void* addr, size_t len, int fd, off_t offset) {
  return Registry::Get().RegisterRegion(reinterpret_cast<uintptr_t>(addr), len, fd, offset);
}

int udiag_mmio_unregister_region(void* addr) {
  return Registry::Get().UnregisterRegion(reinterpret_cast<uintptr_t>(addr));
}

int udiag_mmio_register_probe(struct udiag_mmio_probe* probe) { return Registry::Get().RegisterProbe(probe); }

void udiag_mmio_unregister_probe(struct udiag_mmio_probe* probe) { Registry::Get().UnregisterProbe(probe); }

int udiag_mmio_thread_init(void) { return udiag::mmio::EnsureAltStack(); }

}  // extern "C"
