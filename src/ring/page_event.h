// Decoding one event of a ring page (layout in ring_layout.h): shared by
// the daemon's reader, its check of a page it keeps whole, and a producer
// counting what a vanished daemon never read.
#pragma once

#include <cstdint>
#include <cstring>

#include "ring/ring_layout.h"

namespace udiag::ring {

struct PageEvent {
  uint32_t bytes;       // header and data: the distance to the next event
  uint32_t data_bytes;  // common header + padded payload; 0 for a time extend
  uint64_t delta;       // time since the event before (the page's start for the first)
};

// Decodes the event header at `at`, which has `avail` bytes of the page's
// events from there. False unless it is a data event or a time extend that
// lies within them. Reads each header word once: `at` may be memory the
// producer still writes to, and `out` is what the caller goes by.
inline bool DecodePageEvent(const uint8_t* at, uint64_t avail, PageEvent* out) {
  if (avail < 4) return false;
  uint32_t word;
  std::memcpy(&word, at, sizeof(word));
  const uint32_t type_len = word & kTypeLenMask;
  const uint64_t delta = word >> kTypeLenBits;
  if (type_len - 1 < kMaxSmallTypeLen) {  // 1..28, the usual case
    *out = {4 + type_len * 4, type_len * 4, delta};
    return out->bytes <= avail;
  }
  if (avail < 8) return false;
  uint32_t second;
  std::memcpy(&second, at + 4, sizeof(second));
  if (type_len == kTypeTimeExtend) {
    *out = {8, 0, delta | uint64_t{second} << kTimeDeltaBits};
    return true;
  }
  // Explicit length: it counts its own word, and data is whole words.
  if (type_len != 0 || second < 8 || second % 4 != 0 || second > kPageDataBytes) return false;
  *out = {4 + second, second - 4, delta};
  return out->bytes <= avail;
}

}  // namespace udiag::ring
