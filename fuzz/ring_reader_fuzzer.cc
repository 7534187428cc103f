// Fuzzes the ring's page and event validator: a producer's ring whose header
// and data area hold the fuzz bytes, mapped and read as the daemon does,
// event by event and page by page.
//
// Input: head, tail, lost (3 x u64), then the data area's bytes (the rest of
// a 4 KiB or 8 KiB data area is zero): pages of a 16-byte header and events.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include "base/tsc.h"
#include "ring/ring_reader.h"

using namespace udiag::ring;

namespace {

int MakeRing(const uint8_t* data, size_t size) {
  uint64_t counters[3] = {};
  const size_t counter_bytes = std::min(size, sizeof(counters));
  std::memcpy(counters, data, counter_bytes);
  data += counter_bytes;
  size -= counter_bytes;
  const uint32_t data_size = size > kMinDataSize ? 2 * kMinDataSize : kMinDataSize;
  size = std::min<size_t>(size, data_size);

  int fd = memfd_create("fuzz-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || ftruncate(fd, kHeaderBytes + data_size) != 0) abort();
  void* base = mmap(nullptr, kHeaderBytes + data_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) abort();
  auto* header = new (base) RingHeader{};
  header->magic = kRingMagic;
  header->version = kRingVersion;
  header->data_size = data_size;
  header->tid = 1;
  header->clock = static_cast<uint32_t>(ClockDomain::kMonotonic);
  // The reader starts at the tail: keep it at a page's start so that Map
  // accepts it.
  header->tail.store(counters[1] & ~uint64_t{kRingPageSize - 1});
  header->head.store(counters[0]);
  header->lost.store(counters[2]);
  std::memcpy(static_cast<uint8_t*>(base) + kHeaderBytes, data, size);
  munmap(base, kHeaderBytes + data_size);
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) abort();
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = MakeRing(data, size);
  auto reader = RingReader::Map(fd, udiag::base::MonotonicNs());
  close(fd);
  if (!reader.ok()) return 0;
  uint64_t checksum = 0;
  static uint8_t copy[kRingPageSize];
  // The lost counter's low bits choose, for each of two rounds (the second
  // goes on from where the first stopped), events one by one or closed
  // pages whole (a page's own checks are page_check's), whether the open
  // page is held, and whether reading stops at the time a few pages on
  // (TimeAfterPages, its count from the next byte): nothing later than that
  // may be handed out.
  const uint8_t mode = size > 16 ? data[16] : 0;
  const size_t pages_on = size > 17 ? data[17] % 4 : 0;
  for (int round = 0; round < 2; ++round) {
    if ((mode >> round & 1) == 0) {
      (*reader)->Drain(
          [&](const RecordView& record) {
            for (uint8_t byte : record.payload) checksum += byte;
            checksum += record.type + record.cpu + record.timestamp;
          },
          256);
      continue;
    }
    const bool hold_open_page = (mode & 4) != 0;
    const uint64_t before = (mode & 8) ? (*reader)->TimeAfterPages(pages_on, hold_open_page, 0) : UINT64_MAX;
    (*reader)->StagePages(
        [&](const RecordHead& head, const PayloadSource& payload) {
          if (head.timestamp > before) abort();
          payload.CopyTo(copy);
          checksum += copy[0] + head.type + head.cpu + head.timestamp;
        },
        [&](const PageHead& head, const PayloadSource& page) {
          if (head.timestamp > before) abort();
          page.CopyPageTo(copy);
          checksum += copy[kRingPageSize - 1] + head.cpu + head.timestamp;
        },
        256, hold_open_page, 0, RingReader::kPageWeight, before);
    (*reader)->Release();
  }
  checksum += (*reader)->TakeLost();
  (*reader)->empty();
  return checksum == 1 ? 1 : 0;
}
