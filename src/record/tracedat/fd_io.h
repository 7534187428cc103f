// Whole-buffer writes for the trace.dat writer's files.
#pragma once

#include <cstdint>
#include <span>

namespace udiag::record::tracedat {

// Writes all of `bytes` to `fd` at its position, retrying short writes and
// EINTR. Returns 0 or an errno.
int WriteAll(int fd, std::span<const uint8_t> bytes);

}  // namespace udiag::record::tracedat
