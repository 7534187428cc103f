#include "record/tracedat/recover.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>

#include "base/scoped_fd.h"
#include "record/fd_io.h"
#include "record/tracedat/page_decoder.h"
#include "record/tracedat/region_layout.h"

namespace udiag::record::tracedat {
namespace {

// A twin larger than this is not one we wrote.
constexpr uint64_t kMaxHeaderBytes = uint64_t{256} << 20;

uint64_t FileSize(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

int ParseFile(int fd, ParsedTraceDat* out) {
  uint64_t size = FileSize(fd);
  if (size == 0) return EINVAL;
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) return errno;
  *out = ParsedTraceDat{};
  int error = ParseTraceDat(std::span(static_cast<const uint8_t*>(data), size), out);
  ::munmap(data, size);
  return error;
}

// Puts the header's twin back in front. False when there is none.
bool RestoreTwin(int fd) {
  std::vector<uint8_t> first(kPageSize);
  if (ReadAllAt(fd, first, kHeaderBackupOffset) != 0) return false;
  if (std::memcmp(first.data(), kHeaderBackupMagic, sizeof kHeaderBackupMagic) != 0) return false;
  uint64_t size = 0;
  std::memcpy(&size, first.data() + sizeof kHeaderBackupMagic, sizeof size);
  if (size == 0 || size > kMaxHeaderBytes) return false;
  std::string header(size, '\0');
  std::span bytes(reinterpret_cast<uint8_t*>(header.data()), header.size());
  if (ReadAllAt(fd, bytes, kHeaderBackupOffset + kPageSize) != 0) return false;
  return WriteHeaderBytes(fd, header, 0) == 0;
}

// A page a recorder finished writing: a header and events that decode, no
// older than the page before it. A hole reads as zeros and is not one.
bool CompletePage(std::span<const uint8_t> page, uint32_t long_size, uint64_t* last_timestamp) {
  uint64_t lost = 0, timestamp = 0;
  std::span<const uint8_t> events;
  if (ReadPageHeader(page, long_size, &lost, &events, &timestamp) != 0) return false;
  if (events.empty() || timestamp == 0 || timestamp < *last_timestamp) return false;
  if (ForEachPageRecord(page, long_size, &lost, [](const PageRecord&) {}) != 0) return false;
  *last_timestamp = timestamp;
  return true;
}

uint64_t PageTimestamp(std::span<const uint8_t> page) {
  uint64_t timestamp = 0;
  std::memcpy(&timestamp, page.data(), sizeof timestamp);
  return timestamp;
}

// Extends each cpu whose pages are still in its region by the complete
// pages after them. Returns how many it found.
uint64_t FindPagesAfterCheckpoint(int fd, const ParsedTraceDat& parsed, std::vector<CpuData>* table) {
  const uint64_t region = parsed.region_bytes, file_size = FileSize(fd), page_size = parsed.page_size;
  std::vector<uint8_t> page(page_size);
  uint64_t found = 0;
  for (size_t cpu = 0; cpu < table->size(); ++cpu) {
    CpuData& data = (*table)[cpu];
    uint64_t start = (cpu + 1) * region;
    if (data.size > 0 && data.offset != start) continue;  // not in its region
    uint64_t last_timestamp = 0;
    if (data.size > 0 && ReadAllAt(fd, page, start + data.size - page_size) == 0) last_timestamp = PageTimestamp(page);
    uint64_t end = std::min(start + region, file_size);
    uint64_t size = data.size;
    while (start + size + page_size <= end && ReadAllAt(fd, page, start + size) == 0 &&
           CompletePage(page, parsed.long_size, &last_timestamp)) {
      size += page_size;
      ++found;
    }
    if (size > data.size) data = {start, size};
  }
  return found;
}

int WriteTable(int fd, uint64_t at, const std::vector<CpuData>& table) {
  std::vector<uint8_t> bytes(table.size() * 16);
  for (size_t cpu = 0; cpu < table.size(); ++cpu) {
    std::memcpy(bytes.data() + cpu * 16, &table[cpu].offset, 8);
    std::memcpy(bytes.data() + cpu * 16 + 8, &table[cpu].size, 8);
  }
  return WriteAllAt(fd, bytes, at);
}

}  // namespace

int RecoverTraceDat(const std::string& path, Recovery* out) {
  *out = Recovery{};
  base::ScopedFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) return errno;
  ParsedTraceDat parsed;
  int error = ParseFile(fd.get(), &parsed);
  if (error == EINVAL && RestoreTwin(fd.get())) {
    out->header_from_twin = true;
    error = ParseFile(fd.get(), &parsed);
  }
  if (error != 0) return error;
  out->cpus = parsed.cpus;
  if (parsed.region_bytes == 0) return 0;  // finished, or not ours
  if (parsed.cpu_table_offset == 0 || parsed.page_size != kPageSize) return EINVAL;
  out->was_under_way = true;
  out->pages_found = FindPagesAfterCheckpoint(fd.get(), parsed, &out->cpus);
  auto publish = [&](const std::vector<CpuData>& table) { return WriteTable(fd.get(), parsed.cpu_table_offset, table); };
  if ((error = publish(out->cpus)) != 0) return error;
  uint64_t data_start = (parsed.header_end + kPageSize - 1) / kPageSize * kPageSize;
  if ((error = CompactRegions(fd.get(), data_start, &out->cpus, publish)) != 0) return error;
  // Finished: no later recovery may take a cpu's neighbour for its pages.
  const uint16_t finished = kOptionUdiagRecovered;
  return WriteAllAt(fd.get(), std::span(reinterpret_cast<const uint8_t*>(&finished), sizeof finished),
                    parsed.region_option_offset);
}

}  // namespace udiag::record::tracedat
