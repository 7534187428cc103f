// Parses the metadata of a trace.dat file, v6 or uncompressed v7
// (formats.md §1.3, §1.4): everything but the pages, which it only locates.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "record/trace_model.h"

namespace udiag::record::tracedat {

struct CpuData {
  uint64_t offset = 0;  // in the file
  uint64_t size = 0;    // a multiple of page_size
};

struct ParsedTraceDat {
  uint32_t long_size = 8;
  uint32_t page_size = 0;
  std::vector<EventType> types;  // ftrace formats (system "ftrace") then each system's
  std::vector<Task> tasks;
  TraceInfo info;  // cpus, clock, hostname, lost_at_end (from udiag's option only)
  std::vector<CpuData> cpus;
  // v6: where the flyrecord table of (offset, size) pairs starts in the
  // file, and where the metadata ends (the pages start at a page boundary).
  uint64_t cpu_table_offset = 0;
  uint64_t header_end = 0;
  // A recording under way (kOptionUdiagRegionBytes, at that offset), else 0.
  uint64_t region_bytes = 0;
  uint64_t region_option_offset = 0;
};

// Returns 0, or EINVAL for anything malformed or unsupported (big-endian,
// compressed v7, latency traces), never reading outside `file`.
int ParseTraceDat(std::span<const uint8_t> file, ParsedTraceDat* out);

}  // namespace udiag::record::tracedat
