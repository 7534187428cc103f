// Whole-buffer reads and writes for the trace.dat writer's files, and
// making room in front of data already written.
#pragma once

#include <cstdint>
#include <span>

namespace udiag::record::tracedat {

// Writes all of `bytes` to `fd` at its position, retrying short writes and
// EINTR. Returns 0 or an errno.
int WriteAll(int fd, std::span<const uint8_t> bytes);
// The same at `offset`, leaving the position alone.
int WriteAllAt(int fd, std::span<const uint8_t> bytes, uint64_t offset);
// Fills `bytes` from `offset`. Returns 0, EIO when the file ends first, or an errno.
int ReadAllAt(int fd, std::span<uint8_t> bytes, uint64_t offset);

// Moves the first `size` bytes of the regular file `fd` up by `gap` bytes,
// leaving a gap at its start for a header. Both are multiples of the page
// size. The file system shifts its extents when it can
// (FALLOC_FL_INSERT_RANGE: ext4, XFS), so nothing is copied; elsewhere the
// data is moved through `buffer` (page-aligned, a multiple of the page size),
// last part first. Returns 0 or an errno.
int MakeRoomAtFront(int fd, uint64_t size, uint64_t gap, std::span<uint8_t> buffer);
// MakeRoomAtFront's fallback, on its own for tests.
int MoveUp(int fd, uint64_t size, uint64_t gap, std::span<uint8_t> buffer);

}  // namespace udiag::record::tracedat
