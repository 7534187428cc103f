#include "record/ctf/ctf_recover.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "base/scoped_fd.h"
#include "record/ctf/ctf_layout.h"
#include "record/ctf/ctf_reader.h"

namespace udiag::record::ctf {
namespace {

// The length of the whole packets at the start of `fd`, `size` bytes long.
uint64_t WholePackets(int fd, uint64_t size) {
  std::array<uint8_t, kPacketPreambleSize> preamble;
  uint64_t at = 0;
  while (size - at >= preamble.size() &&
         ::pread(fd, preamble.data(), preamble.size(), static_cast<off_t>(at)) == static_cast<ssize_t>(preamble.size())) {
    uint32_t magic = 0;
    uint64_t bits = 0;
    std::memcpy(&magic, preamble.data() + kMagicAt, sizeof magic);
    std::memcpy(&bits, preamble.data() + kPacketSizeAt, sizeof bits);
    uint64_t bytes = bits / 8;
    if (magic != kPacketMagic || bits % 8 != 0 || bytes < preamble.size() || bytes > size - at) break;
    at += bytes;
  }
  return at;
}

}  // namespace

int CutTornPackets(const std::string& dir, uint64_t* cut_bytes) {
  *cut_bytes = 0;
  struct stat st {};
  if (::stat((dir + "/metadata").c_str(), &st) != 0) return errno == ENOENT ? EINVAL : errno;
  auto paths = CtfStreamPaths(dir);
  if (!paths.ok()) return paths.error();
  for (const std::string& path : *paths) {
    base::ScopedFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
    if (!fd) return errno;
    if (::fstat(fd.get(), &st) != 0) return errno;
    uint64_t size = static_cast<uint64_t>(st.st_size);
    uint64_t whole = WholePackets(fd.get(), size);
    if (whole == size) continue;
    if (::ftruncate(fd.get(), static_cast<off_t>(whole)) != 0) return errno;
    *cut_bytes += size - whole;
  }
  return 0;
}

}  // namespace udiag::record::ctf
