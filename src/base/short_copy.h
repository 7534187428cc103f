// Copying a few dozen bytes of a length known only at run time. A memcpy of
// unknown length is a call that may start `rep movs`, whose start-up cost
// dominated the copy of a typical 30-60 byte record; two fixed-size moves
// that may overlap do it in a handful of instructions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace udiag::base {

namespace internal {
// The first and the last kBytes of [source, source + size), kBytes <= size <= 2 * kBytes.
template <size_t kBytes>
[[gnu::always_inline]] inline void CopyEnds(uint8_t* destination, const uint8_t* source, size_t size) {
  std::memcpy(destination, source, kBytes);
  std::memcpy(destination + size - kBytes, source + size - kBytes, kBytes);
}
}  // namespace internal

// Writes exactly `size` bytes. Some bytes may be read twice (the moves
// overlap): memory another process may change is checked in the copy, never
// in the source, as with memcpy.
[[gnu::always_inline]] inline void CopyShort(uint8_t* destination, const uint8_t* source, size_t size) {
  if (size > 64) {
    std::memcpy(destination, source, size);
  } else if (size >= 32) {
    internal::CopyEnds<32>(destination, source, size);
  } else if (size >= 16) {
    internal::CopyEnds<16>(destination, source, size);
  } else if (size >= 8) {
    internal::CopyEnds<8>(destination, source, size);
  } else {
    for (size_t i = 0; i < size; ++i) destination[i] = source[i];
  }
}

}  // namespace udiag::base
