#include "record/tracedat/region_layout.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

#include "record/fd_io.h"
#include "record/tracedat/tracedat_layout.h"

namespace udiag::record::tracedat {
namespace {

// Below 4 GiB a region could fill in seconds. Readers map whole files: the
// sparse file stays well inside a 47-bit address space.
constexpr uint64_t kMinRegionBytes = uint64_t{1} << 32;
constexpr uint64_t kMaxFileBytes = uint64_t{1} << 46;
constexpr size_t kCopyBytes = 1 << 20;

struct FreeAligned {
  void operator()(uint8_t* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<uint8_t, FreeAligned>;

AlignedBuffer Allocate(size_t bytes) {
  return AlignedBuffer(static_cast<uint8_t*>(std::aligned_alloc(kPageSize, bytes)));
}

// Indexes of the cpus that have pages, in file order.
std::vector<size_t> CpusInFileOrder(const std::vector<CpuData>& table) {
  std::vector<size_t> order;
  for (size_t cpu = 0; cpu < table.size(); ++cpu) {
    if (table[cpu].size > 0) order.push_back(cpu);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return table[a].offset < table[b].offset; });
  return order;
}

// Copies `size` bytes from `from` down to `to` (< from), front to back, so
// an overlap is harmless.
int CopyDown(int fd, uint64_t from, uint64_t to, uint64_t size, uint8_t* buffer) {
  for (uint64_t done = 0; done < size;) {
    size_t part = static_cast<size_t>(std::min<uint64_t>(kCopyBytes, size - done));
    if (int error = ReadAllAt(fd, std::span(buffer, part), from + done)) return error;
    if (int error = WriteAllAt(fd, std::span<const uint8_t>(buffer, part), to + done)) return error;
    done += part;
  }
  return 0;
}

bool Aligned(uint64_t value, uint64_t block) { return value % block == 0; }

// Drops the gap before each cpu's pages, last cpu first. False when the file
// system cannot (the table then says how far it got).
bool CollapseGaps(int fd, uint64_t data_start, std::vector<CpuData>* table,
                  const std::function<int(const std::vector<CpuData>&)>& publish, int* error) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return false;
  uint64_t block = std::max<uint64_t>(st.st_blksize, 1);
  if (!Aligned(data_start, block)) return false;
  for (const CpuData& cpu : *table) {
    if (cpu.size > 0 && (!Aligned(cpu.offset, block) || !Aligned(cpu.size, block))) return false;
  }
  std::vector<size_t> order = CpusInFileOrder(*table);
  for (size_t i = order.size(); i-- > 0;) {
    uint64_t gap_start = i == 0 ? data_start : (*table)[order[i - 1]].offset + (*table)[order[i - 1]].size;
    uint64_t gap_end = (*table)[order[i]].offset;
    if (gap_end <= gap_start) continue;
    uint64_t length = gap_end - gap_start;
    if (::fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, static_cast<off_t>(gap_start), static_cast<off_t>(length)) != 0) {
      return false;
    }
    for (size_t j = i; j < order.size(); ++j) (*table)[order[j]].offset -= length;
    if ((*error = publish(*table)) != 0) return true;
  }
  return true;
}

// Copies each cpu's pages down to follow the previous one's, freeing their
// old place.
int CopyDownAll(int fd, uint64_t data_start, std::vector<CpuData>* table,
                const std::function<int(const std::vector<CpuData>&)>& publish) {
  AlignedBuffer buffer = Allocate(kCopyBytes);
  if (!buffer) return ENOMEM;
  uint64_t at = data_start;
  for (size_t cpu : CpusInFileOrder(*table)) {
    CpuData& data = (*table)[cpu];
    if (data.offset != at) {
      uint64_t old = data.offset;
      if (int error = CopyDown(fd, old, at, data.size, buffer.get())) return error;
      data.offset = at;
      if (int error = publish(*table)) return error;
      uint64_t free_from = std::max(old, at + data.size);
      // Best effort: the truncation at the end frees what this leaves.
      ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(free_from),
                  static_cast<off_t>(old + data.size - free_from));
    }
    at += data.size;
  }
  return 0;
}

}  // namespace

std::optional<RegionLayout> ProbeRegionLayout(int fd, uint32_t cpus) {
  struct stat st {};
  if (cpus == 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != 0) return std::nullopt;
  for (uint64_t region = std::bit_floor(kMaxFileBytes / (uint64_t{cpus} + 1)); region >= kMinRegionBytes; region /= 2) {
    uint64_t total = region * (uint64_t{cpus} + 1);
    if (total / region != uint64_t{cpus} + 1 || total > kMaxFileBytes) continue;
    if (::ftruncate(fd, static_cast<off_t>(total)) != 0) {
      if (errno == EFBIG || errno == EINVAL) continue;
      return std::nullopt;  // e.g. exFAT, which allocates: ENOSPC
    }
    bool sparse = ::fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_blocks) * 512 < kCopyBytes;
    if (::ftruncate(fd, 0) != 0 || !sparse) return std::nullopt;
    return RegionLayout{region, cpus};
  }
  return std::nullopt;
}

int CompactRegions(int fd, uint64_t data_start, std::vector<CpuData>* table,
                   const std::function<int(const std::vector<CpuData>&)>& publish, bool allow_collapse) {
  for (CpuData& cpu : *table) {
    if (cpu.size == 0) cpu.offset = data_start;  // anywhere inside the file
  }
  int error = 0;
  bool collapsed = allow_collapse && CollapseGaps(fd, data_start, table, publish, &error);
  if (error != 0) return error;
  if (!collapsed && (error = CopyDownAll(fd, data_start, table, publish)) != 0) return error;
  uint64_t end = data_start;
  for (const CpuData& cpu : *table) end = std::max(end, cpu.offset + cpu.size);
  if (::ftruncate(fd, static_cast<off_t>(end)) != 0) return errno;
  return publish(*table);
}

int WriteHeaderBytes(int fd, std::string_view bytes, uint64_t offset) {
  size_t padded = (bytes.size() + kPageSize - 1) / kPageSize * kPageSize;
  if (::fallocate(fd, 0, static_cast<off_t>(offset), static_cast<off_t>(padded)) != 0 && errno != EOPNOTSUPP) {
    return errno;
  }
  AlignedBuffer buffer = Allocate(padded);
  if (!buffer) return ENOMEM;
  std::memset(buffer.get(), 0, padded);
  std::memcpy(buffer.get(), bytes.data(), bytes.size());
  return WriteAllAt(fd, std::span<const uint8_t>(buffer.get(), padded), offset);
}

}  // namespace udiag::record::tracedat
