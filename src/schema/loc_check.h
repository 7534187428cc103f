// §9.3 validation of __data_loc / __rel_loc words in one record. Header-only:
// the producer runs it on its fast path before committing, and the daemon runs
// it again on its private copy because the producer is not trusted.
#pragma once

#include <cstdint>
#include <cstring>

namespace udiag::schema {

struct LocCheck {
  uint16_t offset;  // of the loc word in the record (common header included)
  uint8_t relative;  // 1 for __rel_loc, 0 for __data_loc
  uint8_t is_string;  // the referenced bytes must end with a NUL
};

// `record` points at the common header; `record_size` = 8 + payload length,
// which the caller has already checked covers every loc word (min_size).
inline bool LocsValid(const LocCheck* checks, uint32_t count, const uint8_t* record,
                      uint32_t record_size) {
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t loc;
    std::memcpy(&loc, record + checks[i].offset, sizeof(loc));
    uint64_t start = checks[i].relative ? checks[i].offset + 4u + (loc & 0xffffu) : (loc & 0xffffu);
    uint64_t len = loc >> 16;
    if (start + len > record_size) return false;
    // Kernel quirk kept: with len == 0 the byte before the data is inspected.
    if (checks[i].is_string && (start + len == 0 || record[start + len - 1] != '\0')) return false;
  }
  return true;
}

}  // namespace udiag::schema
