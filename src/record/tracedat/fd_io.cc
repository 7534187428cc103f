#include "record/tracedat/fd_io.h"

#include <unistd.h>

#include <cerrno>

namespace udiag::record::tracedat {

int WriteAll(int fd, std::span<const uint8_t> bytes) {
  while (!bytes.empty()) {
    ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) return errno;
    if (written == 0) return EIO;
    bytes = bytes.subspan(static_cast<size_t>(written));
  }
  return 0;
}

}  // namespace udiag::record::tracedat
