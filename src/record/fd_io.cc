#include "record/fd_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace udiag::record {

namespace {

// Calls `transfer(bytes, offset)` (a read or write returning its count) until
// all of `bytes` is done, retrying short transfers and EINTR.
template <typename Bytes, typename Transfer>
int TransferAll(Bytes bytes, uint64_t offset, Transfer transfer) {
  while (!bytes.empty()) {
    ssize_t done = transfer(bytes, offset);
    if (done < 0 && errno == EINTR) continue;
    if (done < 0) return errno;
    if (done == 0) return EIO;
    bytes = bytes.subspan(static_cast<size_t>(done));
    offset += static_cast<uint64_t>(done);
  }
  return 0;
}

}  // namespace

int WriteAll(int fd, std::span<const uint8_t> bytes) {
  return TransferAll(bytes, 0, [fd](auto rest, uint64_t) { return ::write(fd, rest.data(), rest.size()); });
}

int WriteAllAt(int fd, std::span<const uint8_t> bytes, uint64_t offset) {
  return TransferAll(bytes, offset, [fd](auto rest, uint64_t at) {
    return ::pwrite(fd, rest.data(), rest.size(), static_cast<off_t>(at));
  });
}

int ReadAllAt(int fd, std::span<uint8_t> bytes, uint64_t offset) {
  return TransferAll(bytes, offset, [fd](auto rest, uint64_t at) {
    return ::pread(fd, rest.data(), rest.size(), static_cast<off_t>(at));
  });
}

}  // namespace udiag::record
