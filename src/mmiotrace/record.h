// One traced event as the hooks capture it and the session logs it: a plain
// fixed-size struct, so it can be filled in a signal handler, kept in a
// lock-free ring and sent over a socket as bytes.
#pragma once

#include <cstdint>
#include <type_traits>

namespace udiag::mmiotrace {

// The kernel's enum mm_io_opcode values.
enum class RecordKind : uint8_t {
  kRead = 1,
  kWrite = 2,
  kMap = 3,
  kUnmap = 4,
  kUnknown = 5,
};

struct Record {
  uint64_t ts_ns = 0;    // CLOCK_MONOTONIC
  uint64_t phys = 0;     // bus address of the access, or of the mapping's start
  uint64_t value = 0;    // R/W: the bytes read or written (little-endian); MAP: virt
  uint64_t pc = 0;       // accessing instruction (0 for MAP/UNMAP, like mmiotrace)
  uint64_t len = 0;      // MAP: length of the mapping
  int32_t map_id = 0;    // 1, 2, ... per session; UNMAP: -1 when unknown
  int32_t pid = 0;       // process that accessed or mapped
  RecordKind kind = RecordKind::kRead;
  uint8_t width = 0;     // R/W: bytes accessed (1..8)
  uint8_t opcode[3] = {};  // UNKNOWN: first three instruction bytes
  uint8_t reserved[3] = {};
};
static_assert(std::is_trivially_copyable_v<Record>);
static_assert(sizeof(Record) == 56);

}  // namespace udiag::mmiotrace
