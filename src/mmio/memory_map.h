// The calling process's mappings, as /proc/self/maps lists them. Control path
// only (allocates, reads a file).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/error_or.h"

namespace udiag::mmio {

struct Mapping {
  uintptr_t start = 0;
  uintptr_t end = 0;
  int prot = 0;         // PROT_* bits
  bool shared = false;  // 's' in the flags column
  uint64_t offset = 0;  // file offset of `start`
  dev_t device = 0;
  ino_t inode = 0;
  std::string path;  // may be empty, "[heap]", "/memfd:x (deleted)", ...
};

// Sorted by address.
base::ErrorOr<std::vector<Mapping>> ReadMemoryMap();

// The mapping containing `addr`, or nullptr.
const Mapping* FindMapping(const std::vector<Mapping>& maps, uintptr_t addr);

// Parses one line of /proc/<pid>/maps; false when it is malformed.
bool ParseMapsLine(const std::string& line, Mapping* out);

}  // namespace udiag::mmio
