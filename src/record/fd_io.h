// Whole-buffer reads and writes, retrying short ones and EINTR.
#pragma once

#include <cstdint>
#include <span>

namespace udiag::record {

// Writes all of `bytes` to `fd` at its position, retrying short writes and
// EINTR. Returns 0 or an errno.
int WriteAll(int fd, std::span<const uint8_t> bytes);
// The same at `offset`, leaving the position alone.
int WriteAllAt(int fd, std::span<const uint8_t> bytes, uint64_t offset);
// Fills `bytes` from `offset`. Returns 0, EIO when the file ends first, or an errno.
int ReadAllAt(int fd, std::span<uint8_t> bytes, uint64_t offset);

}  // namespace udiag::record
