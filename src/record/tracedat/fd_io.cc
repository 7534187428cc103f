#include "record/tracedat/fd_io.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

#include <algorithm>
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

int WriteAllAt(int fd, std::span<const uint8_t> bytes, uint64_t offset) {
  while (!bytes.empty()) {
    ssize_t written = ::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) return errno;
    if (written == 0) return EIO;
    bytes = bytes.subspan(static_cast<size_t>(written));
    offset += static_cast<uint64_t>(written);
  }
  return 0;
}

int ReadAllAt(int fd, std::span<uint8_t> bytes, uint64_t offset) {
  while (!bytes.empty()) {
    ssize_t got = ::pread(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return errno;
    if (got == 0) return EIO;
    bytes = bytes.subspan(static_cast<size_t>(got));
    offset += static_cast<uint64_t>(got);
  }
  return 0;
}

int MakeRoomAtFront(int fd, uint64_t size, uint64_t gap, std::span<uint8_t> buffer) {
  if (size == 0 || gap == 0) return 0;
  if (::fallocate(fd, FALLOC_FL_INSERT_RANGE, 0, static_cast<off_t>(gap)) == 0) return 0;
  return MoveUp(fd, size, gap, buffer);
}

int MoveUp(int fd, uint64_t size, uint64_t gap, std::span<uint8_t> buffer) {
  // Last part first, so nothing is overwritten before it has moved.
  for (uint64_t end = size; end > 0;) {
    size_t part = static_cast<size_t>(std::min<uint64_t>(buffer.size(), end));
    uint64_t start = end - part;
    if (int error = ReadAllAt(fd, buffer.first(part), start)) return error;
    if (int error = WriteAllAt(fd, buffer.first(part), start + gap)) return error;
    end = start;
  }
  return 0;
}

}  // namespace udiag::record::tracedat
