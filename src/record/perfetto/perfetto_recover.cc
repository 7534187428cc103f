#include "record/perfetto/perfetto_recover.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/scoped_fd.h"

namespace udiag::record {
namespace {

// Trace.packet (field 1), length-delimited: the only field the writer emits.
constexpr uint8_t kPacketTag = 0x0a;

// Reads the varint at `at`; false when it does not end before `end` (torn)
// or runs past 10 bytes (not a varint).
bool ReadVarint(const uint8_t*& at, const uint8_t* end, uint64_t* value, bool* malformed) {
  *value = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (at == end) return false;
    const uint8_t byte = *at++;
    *value |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) return true;
  }
  *malformed = true;
  return false;
}

}  // namespace

int CutTornPerfettoPacket(const std::string& path, uint64_t* cut_bytes) {
  *cut_bytes = 0;
  base::ScopedFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) return errno;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return errno;
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size == 0) return EINVAL;
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) return errno;
  const auto* const begin = static_cast<const uint8_t*>(map);
  const uint8_t* const end = begin + size;
  const uint8_t* whole = begin;  // the end of the last whole packet
  bool malformed = false;
  for (const uint8_t* at = begin; at != end && !malformed;) {
    if (*at++ != kPacketTag) {
      malformed = true;
      break;
    }
    uint64_t length;
    if (!ReadVarint(at, end, &length, &malformed) || length > static_cast<uint64_t>(end - at)) break;
    at += length;
    whole = at;
  }
  ::munmap(map, size);
  if (malformed) return EINVAL;
  *cut_bytes = static_cast<uint64_t>(end - whole);
  if (*cut_bytes != 0 && ::ftruncate(fd.get(), whole - begin) != 0) return errno;
  return 0;
}

}  // namespace udiag::record
