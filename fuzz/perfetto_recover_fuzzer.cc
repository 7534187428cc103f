// Fuzzes `udiag recover` of a Perfetto file (src/record/perfetto/
// perfetto_recover): the input is the file. The result must be what a
// walk of the input on its own says: refused (EINVAL) with the file
// unchanged, or cut to the input's whole packets before a torn one.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "record/perfetto/perfetto_recover.h"

namespace {

std::vector<uint8_t> ReadBack(const std::string& path) {
  std::vector<uint8_t> bytes;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) abort();
  uint8_t chunk[4096];
  for (ssize_t n; (n = ::read(fd, chunk, sizeof chunk)) > 0;) bytes.insert(bytes.end(), chunk, chunk + n);
  ::close(fd);
  return bytes;
}

// What recover must do with `bytes`, worked out on its own: false (EINVAL)
// for an empty file, or a field that is not a Trace.packet or a varint
// longer than 10 bytes before the end; else true, keeping the `*keep`
// bytes of the whole packets before a torn one.
bool ExpectedCut(const uint8_t* bytes, size_t size, size_t* keep) {
  *keep = 0;
  size_t at = 0;
  while (at < size) {
    if (bytes[at++] != 0x0a) return false;
    uint64_t length = 0;
    bool ended = false;
    for (int shift = 0; shift < 70 && at < size; shift += 7) {
      const uint8_t b = bytes[at++];
      length |= uint64_t{b & 0x7fu} << shift;
      if (b < 0x80) {
        ended = true;
        break;
      }
    }
    if (!ended) return at - *keep - 1 < 10;  // torn inside the varint, unless it ran too long
    if (length > size - at) return true;     // torn inside the packet
    at += length;
    *keep = at;
  }
  return size > 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/perfetto_recover_fuzzer." + std::to_string(getpid());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || (size > 0 && ::write(fd, data, size) != static_cast<ssize_t>(size))) abort();
  ::close(fd);
  uint64_t cut = 0;
  const int err = udiag::record::CutTornPerfettoPacket(path, &cut);
  const std::vector<uint8_t> left = ReadBack(path);
  size_t keep = 0;
  const bool cuts = ExpectedCut(data, size, &keep);
  if (!cuts) keep = size;  // refused: the file as it was
  if (err != (cuts ? 0 : EINVAL)) abort();
  if (left.size() != keep || cut != size - keep) abort();
  if (keep > 0 && std::memcmp(left.data(), data, keep) != 0) abort();
  ::unlink(path.c_str());
  return 0;
}
