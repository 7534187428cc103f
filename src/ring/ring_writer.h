// Producer side of an event ring (layout in ring_layout.h): one writer per
// ring, writing ftrace pages. When the ring has no free page it drops and
// counts, unless the daemon set `full_wait_ms` (a consumer asked not to lose
// events): then it first waits that long for room. A wait that times out is
// not repeated until the daemon has consumed something, so a stalled daemon
// costs a thread one timeout, not one per event.
//
// Fast path, for an event on the same cpu that fits in the open page: three
// compares, the event and common header words, the caller's payload copy, a
// release store of head and one relaxed load of consumer_sleeping. Room in
// the ring is looked for only when a page is opened, and so is whether a
// dozing consumer is due a poke.
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
#include <utility>

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
    tid_ = header_->tid;
    // A page is opened at a page boundary: round a head left inside one up.
    head_ = (header_->head.load(std::memory_order_relaxed) + kRingPageSize - 1) & ~uint64_t{kRingPageSize - 1};
    page_ = nullptr;
    page_cpu_ = kNoPage;
    page_used_ = 0;
    last_timestamp_ = 0;
    cached_tail_ = head_ - size_;  // full until the first page reads the tail
    reserved_ = 0;
    gave_up_at_tail_ = UINT64_MAX;
    dozer_due_poke_ = false;
    overflowed_ = false;
  }
  bool attached() const { return header_ != nullptr; }
  uint64_t data_size() const { return size_; }

  // Whether a write was dropped for want of room since the last call (not
  // one too large for any ring): the caller may then move to a bigger ring.
  bool TakeOverflow() { return std::exchange(overflowed_, false); }

  // Reserves an event with room for payload_len bytes, writes its headers
  // (event `type`, this ring's thread) and returns the payload area, or
  // nullptr (counted in `lost`) when the ring is full or payload_len >
  // kMaxPayload. At most one reservation is open; a new Reserve replaces it.
  // A timestamp below the last one is taken as equal to it.
  uint8_t* Reserve(uint32_t payload_len, uint16_t type, uint16_t cpu, uint64_t timestamp) {
    uint8_t* const at = ReserveUnlessFull(payload_len, type, cpu, timestamp);
    if (!at && payload_len <= kMaxPayload) CountLost();
    return at;
  }

  // Reserve, except that an event the full ring has no room for is not
  // counted: the caller may move to a larger ring and reserve it there,
  // or count it with CountLost.
  uint8_t* ReserveUnlessFull(uint32_t payload_len, uint16_t type, uint16_t cpu, uint64_t timestamp) {
    if (payload_len > kMaxPayload) [[unlikely]] {
      CountLost();
      return nullptr;
    }
    if (uint8_t* at = ReserveInOpenPage(payload_len, type, cpu, timestamp)) [[likely]]
      return at;
    return ReserveInGeneral(payload_len, type, cpu, timestamp);
  }

  // The reservation of the common case, which calls nothing: an event on
  // the open page's cpu that fits in it and needs no time extend. Otherwise
  // nullptr, with nothing changed or counted. payload_len <= kMaxPayload.
  [[gnu::always_inline]] uint8_t* ReserveInOpenPage(uint32_t payload_len, uint16_t type, uint16_t cpu,
                                                    uint64_t timestamp) {
    const uint32_t padded = PaddedData(payload_len);
    const uint32_t event_bytes = EventBytes(padded);
    const uint64_t delta = timestamp - last_timestamp_;
    if (cpu != page_cpu_ || delta > kMaxTimeDelta || page_used_ + event_bytes > kPageRoom) [[unlikely]] {
      return nullptr;
    }
    return PutEvent(0, padded, static_cast<uint32_t>(delta), type, timestamp);
  }

  // Publishes the reserved event. Returns true when the consumer sleeps, or
  // dozes and the page this event opened found an eighth of the ring
  // unread, and this call took that flag: the caller must then wake it.
  //
  // The flag is read without a fence after the head store, so a consumer that
  // goes to sleep at the same moment can miss this event's wake-up: the
  // consumer must sleep with a timeout (a full fence here would cost more
  // than the rest of the write).
  [[gnu::always_inline]] bool Commit() {
    page_used_ += reserved_;
    reserved_ = 0;
    last_timestamp_ = reserved_timestamp_;
    head_ = page_start_ + sizeof(PageHeader) + page_used_;
    header_->head.store(head_, std::memory_order_release);
    const uint32_t consumer = header_->consumer_sleeping.load(std::memory_order_relaxed);
    if (consumer != kConsumerAwake && (consumer == kConsumerSleeps || dozer_due_poke_)) [[unlikely]] {
      dozer_due_poke_ = false;
      return header_->consumer_sleeping.exchange(kConsumerAwake, std::memory_order_acq_rel) != kConsumerAwake;
    }
    return false;
  }

  // Drops the reservation: no event becomes visible and nothing is counted
  // lost (the page before may have been closed to make room, which is fine).
  void Abandon() { reserved_ = 0; }

  // Tells the consumer this thread writes here no more (it exited, or moved
  // to a larger ring); it frees the ring once drained.
  void MarkClosed() { header_->closed.store(1, std::memory_order_release); }

  // Counts an event dropped: the reader reports it lost.
  void CountLost() {
    header_->lost.store(header_->lost.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
  }

 private:
  static constexpr uint32_t kNoPage = UINT32_MAX;  // page_cpu_ while no page is open

  // The common header and payload rounded up to words, and with its event
  // header the bytes the event takes in a page.
  static uint32_t PaddedData(uint32_t payload_len) { return (kCommonHeaderBytes + payload_len + 3) & ~3u; }
  static uint32_t EventBytes(uint32_t padded) { return padded + (padded <= kMaxSmallData ? 4 : 8); }

  // Writes the event's headers `extend_bytes` into the open page's free
  // part (after a time extend put there) and reserves it.
  [[gnu::always_inline]] uint8_t* PutEvent(uint32_t extend_bytes, uint32_t padded, uint32_t delta,
                                           uint16_t type, uint64_t timestamp) {
    uint8_t* at = page_ + sizeof(PageHeader) + page_used_ + extend_bytes;
    uint32_t data_at = 4;
    if (padded <= kMaxSmallData) {
      const uint32_t word = padded / 4 | delta << kTypeLenBits;
      std::memcpy(at, &word, 4);
    } else {
      const uint32_t words[2] = {delta << kTypeLenBits, padded + 4};
      std::memcpy(at, words, 8);
      data_at = 8;
    }
    uint8_t* data = at + data_at;
    const uint32_t zero = 0;
    std::memcpy(data + padded - 4, &zero, 4);  // the padding; the payload overwrites the rest
    const uint64_t common = type | uint64_t{tid_} << 32;  // flags and preempt count 0
    std::memcpy(data, &common, sizeof(common));
    reserved_ = extend_bytes + data_at + padded;
    reserved_timestamp_ = timestamp;
    return data + kCommonHeaderBytes;
  }

  // Reserve when the event needs a new page (another cpu, no room, none
  // open) or a time extend, or came with an earlier timestamp.
  [[gnu::noinline]] uint8_t* ReserveInGeneral(uint32_t payload_len, uint16_t type, uint16_t cpu,
                                              uint64_t timestamp) {
    const uint32_t padded = PaddedData(payload_len);
    const uint32_t event_bytes = EventBytes(padded);
    // After a drop too: the next page must not start before the last event.
    if (timestamp < last_timestamp_) timestamp = last_timestamp_;
    uint64_t delta = timestamp - last_timestamp_;
    const uint32_t extend_bytes = delta > kMaxTimeDelta ? 8 : 0;
    if (cpu != page_cpu_ || page_used_ == 0 || page_used_ + extend_bytes + event_bytes > kPageRoom) {
      if (!OpenPage(cpu, timestamp)) {
        overflowed_ = true;
        return nullptr;
      }
      return PutEvent(0, padded, 0, type, timestamp);
    }
    if (extend_bytes != 0) {
      uint8_t* at = page_ + sizeof(PageHeader) + page_used_;
      const uint32_t words[2] = {kTypeTimeExtend | static_cast<uint32_t>(delta & kMaxTimeDelta) << kTypeLenBits,
                                 static_cast<uint32_t>(delta >> kTimeDeltaBits)};
      std::memcpy(at, words, 8);
      delta = 0;
    }
    return PutEvent(extend_bytes, padded, static_cast<uint32_t>(delta), type, timestamp);
  }

  // Closes the open page, if it has events, and opens the next free one for
  // `cpu`, its first event stamped `timestamp`. False when no page is free.
  bool OpenPage(uint16_t cpu, uint64_t timestamp) {
    if (page_cpu_ != kNoPage && page_used_ != 0) {
      // Only the byte count: the reader may be copying the cpu beside it.
      std::memcpy(page_ + offsetof(PageHeader, commit), &page_used_, sizeof(page_used_));
      head_ = page_start_ + kRingPageSize;
      header_->head.store(head_, std::memory_order_release);
    }
    page_cpu_ = kNoPage;
    // An open page without events is still free: it is simply opened again.
    if (!HasFreePage() && !WaitForFreePage()) return false;
    page_start_ = head_;
    page_ = data_ + (head_ & mask_);
    page_used_ = 0;
    page_cpu_ = cpu;
    last_timestamp_ = timestamp;
    const PageHeader header{timestamp, uint64_t{cpu} << 32};
    std::memcpy(page_, &header, sizeof(header));
    dozer_due_poke_ = header_->consumer_sleeping.load(std::memory_order_relaxed) == kConsumerDozes &&
                      EighthUnread();
    return true;
  }

  // Whether an eighth of the ring is unread, by the shared tail (the cached
  // one may be far behind). Acquire: HasFreePage frees pages by the cached
  // tail, after the reader's last read of them.
  [[gnu::noinline]] bool EighthUnread() {
    cached_tail_ = std::max(cached_tail_, std::min(header_->tail.load(std::memory_order_acquire), head_));
    return head_ - cached_tail_ >= size_ / 8;
  }

  // True when the page at head_ is free, re-reading the shared tail if the
  // cached one says it is not.
  bool HasFreePage() {
    if (head_ + kRingPageSize - cached_tail_ <= size_) return true;
    const uint64_t tail = header_->tail.load(std::memory_order_acquire);
    // A tail ahead of head or too far behind it is a consumer bug: stay full
    // rather than overwrite what it may still read.
    cached_tail_ = (tail <= head_ && head_ - tail <= size_) ? tail : head_ - size_;
    return head_ + kRingPageSize - cached_tail_ <= size_;
  }

  // Waits up to full_wait_ms for a free page. The daemon wakes us when it
  // frees space; the wait is sliced so a missed wake-up costs at most a slice.
  [[gnu::noinline, gnu::cold]] bool WaitForFreePage() {
    const uint32_t wait_ms = header_->full_wait_ms.load(std::memory_order_relaxed);
    if (wait_ms == 0 || cached_tail_ == gave_up_at_tail_) return false;
    constexpr uint64_t kSliceNs = 1'000'000;
    const uint64_t deadline = base::MonotonicNs() + uint64_t{wait_ms} * 1'000'000;
    for (;;) {
      // seq_cst: the daemon stores the tail, then reads this flag.
      header_->writer_waiting.store(1, std::memory_order_seq_cst);
      if (HasFreePage()) break;
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
  uint32_t tid_ = 0;
  uint64_t head_ = 0;         // as published
  uint64_t cached_tail_ = 0;  // head_ - cached_tail_ <= size_ always
  // The open page: where it starts in the byte stream and in memory, its
  // cpu (kNoPage: none open) and the bytes of its events.
  uint64_t page_start_ = 0;
  uint8_t* page_ = nullptr;
  uint32_t page_cpu_ = kNoPage;
  uint32_t page_used_ = 0;
  uint64_t last_timestamp_ = 0;  // of the page's last event, or its start
  uint32_t reserved_ = 0;        // bytes of the open reservation
  uint64_t reserved_timestamp_ = 0;
  uint64_t gave_up_at_tail_ = UINT64_MAX;  // the tail a wait timed out at
  bool dozer_due_poke_ = false;            // the next Commit pokes a dozing consumer
  bool overflowed_ = false;                // a write found no free page (TakeOverflow)
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
  header->features = kRingWakesDozingConsumer;
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
