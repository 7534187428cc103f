// Reading and checking caller-supplied pointers the way the kernel's
// copy_from_user does: a bad pointer gives EFAULT instead of a crash. Used on
// the registration path only (each call is a system call).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace udiag::producer {

// Copies `n` bytes from `addr` in this process; 0 or EFAULT.
int CopyFromUser(void* dst, uint64_t addr, size_t n);
// Copies `n` bytes to `addr` in this process; 0 or EFAULT.
int CopyToUser(uint64_t addr, const void* src, size_t n);
// Copies a NUL-terminated string of at most `max` bytes including the NUL:
// 0, EFAULT, or EINVAL when no NUL comes within `max`.
int CopyStringFromUser(uint64_t addr, size_t max, std::string* out);
// Whether [addr, addr+n) lies in writable mappings of this process.
bool IsWritable(uint64_t addr, size_t n);

}  // namespace udiag::producer
