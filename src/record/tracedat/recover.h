// `udiag recover`: makes a trace.dat whose recorder was killed (or ran out of
// disk) whole again. The file is readable as it is, up to its last
// checkpoint (region_layout.h); recovering also takes the complete pages
// written after that checkpoint, restores a header torn by the kill from its
// twin, and squeezes the sparse regions into an ordinary file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "record/tracedat/file_parser.h"

namespace udiag::record::tracedat {

struct Recovery {
  bool header_from_twin = false;  // the header at the front was torn
  bool was_under_way = false;     // false: a finished file, left as it was
  uint64_t pages_found = 0;       // complete pages after the last checkpoint
  std::vector<CpuData> cpus;      // where the pages are now
};

// Recovers `path` in place. Returns 0, EINVAL when it is not a trace.dat
// whose header or twin can be read, or the errno of a failed read or write.
int RecoverTraceDat(const std::string& path, Recovery* out);

}  // namespace udiag::record::tracedat
