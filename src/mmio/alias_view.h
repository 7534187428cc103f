// Alias views: a second, never-protected mapping of the same memory, through
// which designs B and B' perform the accesses to probed pages. Control path only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/error_or.h"
#include "mmio/memory_map.h"

namespace udiag::mmio {

// An owned mmap of [virt, virt+len)'s memory at `alias`.
class AliasView {
 public:
  AliasView(uintptr_t virt, size_t len, uint8_t* alias) : virt_(virt), len_(len), alias_(alias) {}
  AliasView(const AliasView&) = delete;
  AliasView& operator=(const AliasView&) = delete;
  ~AliasView();

  uintptr_t virt() const { return virt_; }
  size_t len() const { return len_; }
  bool Contains(uintptr_t addr) const { return addr >= virt_ && addr - virt_ < len_; }
  uint8_t* Translate(uintptr_t addr) const { return alias_ + (addr - virt_); }

 private:
  uintptr_t virt_;
  size_t len_;
  uint8_t* alias_;
};

// Maps `len` bytes of `fd` at `offset` read-write (read-only if the file is
// not open for writing) as the view of [virt, virt+len).
base::ErrorOr<std::unique_ptr<AliasView>> MapAliasView(uintptr_t virt, size_t len, int fd, off_t offset);

// Finds a second view of a shared file-backed mapping by itself: through
// /proc/self/map_files, the file's path, or an open descriptor of the same
// inode. ENOTSUP for private or anonymous mappings.
base::ErrorOr<std::unique_ptr<AliasView>> FindAliasView(const Mapping& mapping);

}  // namespace udiag::mmio
