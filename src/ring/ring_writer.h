// Producer side of an event ring (layout in ring_layout.h): one writer per
// ring. When the ring is full it drops and counts, unless the daemon set
// `full_wait_ms` (a consumer asked not to lose events): then it first waits
// that long for room. A wait that times out is not repeated until the
// daemon has consumed something, so a stalled daemon costs a thread one
// timeout, not one per event.
//
// Fast path: two compares against private copies of head and tail, a 16-byte
// header store, the caller's payload copy, a release store of head and one
// relaxed load of consumer_sleeping. The shared tail is read only when the
// private copy says the ring is full.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>

#include "base/tsc.h"
#include "ring/ring_futex.h"
#include "ring/ring_layout.h"

namespace udiag::ring {

class RingWriter {
 public:
  RingWriter() = default;

  // `base` = start of the mapping (header at base, data at base + kHeaderBytes),
  // initialized by CreateRing.
  void Attach(void* base) {
    header_ = static_cast<RingHeader*>(base);
    data_ = static_cast<uint8_t*>(base) + kHeaderBytes;
    size_ = header_->data_size;
    mask_ = size_ - 1;
    head_ = header_->head.load(std::memory_order_relaxed);
    cached_tail_ = head_ - size_;  // full until the first Reserve reads the tail
    reserved_ = 0;
    gave_up_at_tail_ = UINT64_MAX;
  }
  bool attached() const { return header_ != nullptr; }

  // Reserves a record with room for payload_len bytes, fills its header and
  // returns the payload area, or nullptr (counted in `lost`) when the ring is
  // full or payload_len > kMaxPayload. At most one reservation is open; a new
  // Reserve replaces it. `type` is never kPaddingType (event ids start at 1).
  uint8_t* Reserve(uint32_t payload_len, uint16_t type, uint16_t cpu, uint64_t timestamp) {
    assert(type != kPaddingType);
    if (payload_len > kMaxPayload) [[unlikely]] {
      return Drop();
    }
    const uint32_t size = sizeof(RecordHeader) + payload_len;
    const uint64_t bytes = AlignRecord(size);
    uint64_t pos = head_ & mask_;
    if (bytes > size_ - pos || bytes > size_ - (head_ - cached_tail_)) [[unlikely]] {
      if (!MakeRoom(bytes) && !WaitForRoom(bytes)) return Drop();
      pos = head_ & mask_;
    }
    uint8_t* record = data_ + pos;
    const RecordHeader header{size, type, cpu, timestamp};
    std::memcpy(record, &header, sizeof(header));
    reserved_ = bytes;
    return record + sizeof(RecordHeader);
  }

  // Publishes the reserved record. Returns true when the consumer said it
  // sleeps and this call took that flag: the caller must then wake it.
  //
  // The flag is read without a fence after the head store, so a consumer that
  // goes to sleep at the same moment can miss this record's wake-up: the
  // consumer must sleep with a timeout (a full fence here would cost more
  // than the rest of the write).
  bool Commit() {
    head_ += reserved_;
    reserved_ = 0;
    header_->head.store(head_, std::memory_order_release);
    if (header_->consumer_sleeping.load(std::memory_order_relaxed) != 0) [[unlikely]] {
      return header_->consumer_sleeping.exchange(0, std::memory_order_acq_rel) != 0;
    }
    return false;
  }

  // Drops the reservation: no record becomes visible and nothing is counted
  // lost (a padding record written to wrap may already be, which readers skip).
  void Abandon() { reserved_ = 0; }

  // Tells the consumer this thread exited; it frees the ring once drained.
  void MarkClosed() { header_->closed.store(1, std::memory_order_release); }

 private:
  uint8_t* Drop() {
    header_->lost.store(header_->lost.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
    return nullptr;
  }

  // True when `bytes` fit in the free space, re-reading the shared tail if
  // the cached one says they do not.
  bool Fits(uint64_t bytes) {
    if (bytes <= size_ - (head_ - cached_tail_)) return true;
    const uint64_t tail = header_->tail.load(std::memory_order_acquire);
    // A tail ahead of head or too far behind it is a consumer bug: stay full
    // rather than overwrite what it may still read.
    cached_tail_ = (tail <= head_ && head_ - tail <= size_) ? tail : head_ - size_;
    return bytes <= size_ - (head_ - cached_tail_);
  }

  // Slow path of Reserve: refreshes the tail and, when the record would cross
  // the end of the data area, publishes a padding record up to it first.
  // Publishing the padding on its own lets a record larger than the space
  // before the write position fit once the consumer catches up, even in the
  // smallest ring.
  [[gnu::noinline]] bool MakeRoom(uint64_t bytes) {
    const uint64_t to_end = size_ - (head_ & mask_);
    if (bytes <= to_end) return Fits(bytes);
    if (!Fits(to_end)) return false;
    const RecordHeader padding{static_cast<uint32_t>(to_end), kPaddingType, 0, 0};
    std::memcpy(data_ + (head_ & mask_), &padding, 8);  // the area may end here
    head_ += to_end;
    header_->head.store(head_, std::memory_order_release);
    return Fits(bytes);
  }

  // Waits up to full_wait_ms for MakeRoom(bytes) to succeed. The daemon
  // wakes us when it frees space; the wait is sliced so a missed wake-up
  // costs at most a slice.
  [[gnu::noinline, gnu::cold]] bool WaitForRoom(uint64_t bytes) {
    const uint32_t wait_ms = header_->full_wait_ms.load(std::memory_order_relaxed);
    if (wait_ms == 0 || cached_tail_ == gave_up_at_tail_) return false;
    constexpr uint64_t kSliceNs = 1'000'000;
    const uint64_t deadline = base::MonotonicNs() + uint64_t{wait_ms} * 1'000'000;
    for (;;) {
      // seq_cst: the daemon stores the tail, then reads this flag.
      header_->writer_waiting.store(1, std::memory_order_seq_cst);
      if (MakeRoom(bytes)) break;
      const uint64_t now = base::MonotonicNs();
      // The daemon may have turned waiting off meanwhile.
      if (now >= deadline || header_->full_wait_ms.load(std::memory_order_relaxed) == 0) {
        gave_up_at_tail_ = cached_tail_;
        header_->writer_waiting.store(0, std::memory_order_relaxed);
        return false;
      }
      FutexWait(&header_->writer_waiting, 1, std::min(deadline - now, kSliceNs));
    }
    header_->writer_waiting.store(0, std::memory_order_relaxed);
    return true;
  }

  RingHeader* header_ = nullptr;
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t mask_ = 0;
  uint64_t head_ = 0;         // committed bytes, as published
  uint64_t cached_tail_ = 0;  // head_ - cached_tail_ <= size_ always
  uint64_t reserved_ = 0;     // bytes of the open reservation
  uint64_t gave_up_at_tail_ = UINT64_MAX;  // the tail a wait timed out at
};

struct RingMapping {
  int fd;
  void* base;
  size_t bytes;
};

// Creates a ring in a sealed memfd, mapped shared at out->base. Returns 0 or
// an errno (EINVAL when data_size is not a power of two in
// [kMinDataSize, kMaxDataSize]). The caller owns out->fd and the mapping.
inline int CreateRing(uint32_t data_size, uint32_t tid, ClockDomain clock, RingMapping* out) {
  if (data_size < kMinDataSize || data_size > kMaxDataSize || (data_size & (data_size - 1)) != 0) {
    return EINVAL;
  }
  const int fd = memfd_create("udiag-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return errno;
  const size_t bytes = kHeaderBytes + data_size;
  void* base = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
    base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  if (base == MAP_FAILED) {
    const int err = errno;
    close(fd);
    return err;
  }
  auto* header = new (base) RingHeader{};
  header->magic = kRingMagic;
  header->version = kRingVersion;
  header->data_size = data_size;
  header->tid = tid;
  header->clock = static_cast<uint32_t>(clock);
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int err = errno;
    munmap(base, bytes);
    close(fd);
    return err;
  }
  *out = {fd, base, bytes};
  return 0;
}

}  // namespace udiag::ring
