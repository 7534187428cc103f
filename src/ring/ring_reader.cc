#include "ring/ring_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/tsc.h"
#include "ring/ring_futex.h"

namespace udiag::ring {
namespace {

bool IsPowerOfTwo(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

// Where head may be: at a page's start, or after an event of it
// (events are whole words, and the first one has a header word at least).
bool PositionValid(uint64_t position) {
  const uint64_t in_page = position % kRingPageSize;
  return position % 4 == 0 && (in_page == 0 || in_page >= sizeof(PageHeader) + 4);
}

// A lost event is one failed reserve, which costs its thread more than a
// nanosecond: the lost counter cannot honestly grow faster than that. The
// slack keeps a coarse clock from hiding real losses.
constexpr uint64_t kMaxLostPerNs = 1;
constexpr uint64_t kLostSlack = 4096;

// The fields the producer writes once, read once: the live header may change.
struct FixedFields {
  uint32_t magic;
  uint32_t version;
  uint32_t data_size;
  uint32_t tid;
  uint32_t clock;
  uint32_t features;
};
static_assert(offsetof(RingHeader, features) + sizeof(uint32_t) == sizeof(FixedFields));

}  // namespace

base::ErrorOr<std::unique_ptr<RingReader>> RingReader::Map(int memfd, uint64_t losses_since_ns) {
  constexpr int kNeededSeals = F_SEAL_SHRINK | F_SEAL_GROW;
  const int seals = fcntl(memfd, F_GET_SEALS);
  if (seals < 0 || (seals & kNeededSeals) != kNeededSeals) return base::Errno{EPERM};

  struct stat st;
  if (fstat(memfd, &st) != 0) return base::Errno{errno};
  const uint64_t file_bytes = static_cast<uint64_t>(st.st_size);
  if (file_bytes < kHeaderBytes + kMinDataSize || file_bytes > kHeaderBytes + kMaxDataSize ||
      !IsPowerOfTwo(file_bytes - kHeaderBytes)) {
    return base::Errno{EINVAL};
  }

  void* base = mmap(nullptr, file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  if (base == MAP_FAILED) return base::Errno{errno};
  const auto* header = static_cast<const RingHeader*>(base);
  FixedFields fixed;
  std::memcpy(&fixed, base, sizeof(fixed));
  const uint64_t tail = header->tail.load(std::memory_order_relaxed);
  int error = 0;
  if (fixed.magic != kRingMagic || fixed.version != kRingVersion) {
    error = EPROTO;
  } else if (fixed.data_size != file_bytes - kHeaderBytes) {
    error = EINVAL;
  } else if ((fixed.clock != static_cast<uint32_t>(ClockDomain::kTsc) &&
              fixed.clock != static_cast<uint32_t>(ClockDomain::kMonotonic)) ||
             tail % kRingPageSize != 0) {
    error = EPROTO;
  }
  if (error != 0) {
    munmap(base, file_bytes);
    return base::Errno{error};
  }
  return std::unique_ptr<RingReader>(new RingReader(base, file_bytes, fixed.data_size, fixed.tid,
                                                    static_cast<ClockDomain>(fixed.clock), tail,
                                                    (fixed.features & kRingWakesDozingConsumer) != 0,
                                                    losses_since_ns));
}

RingReader::RingReader(void* base, size_t map_bytes, uint32_t data_size, uint32_t tid,
                       ClockDomain clock, uint64_t tail, bool wakes_dozing_consumer, uint64_t losses_since_ns)
    : header_(static_cast<RingHeader*>(base)),
      data_(static_cast<const uint8_t*>(base) + kHeaderBytes),
      map_bytes_(map_bytes),
      size_(data_size),
      mask_(data_size - 1),
      tid_(tid),
      clock_(clock),
      wakes_dozing_consumer_(wakes_dozing_consumer),
      tail_(tail),
      published_tail_(tail),
      head_(tail),
      lost_checked_ns_(losses_since_ns) {}

RingReader::~RingReader() { munmap(header_, map_bytes_); }

bool RingReader::LoadHead() {
  // Called only once tail_ caught up with head_: a head that moved backwards
  // makes head - tail_ wrap past size_.
  const uint64_t head = header_->head.load(std::memory_order_acquire);
  if (head - tail_ > size_ || !PositionValid(head)) {
    broken_ = true;
    return false;
  }
  head_ = head;
  return true;
}

uint64_t RingReader::TimeAfterPages(size_t pages, bool hold_open_page, uint64_t held_if_since) {
  if (broken_ || !LoadHead()) return UINT64_MAX;
  const uint64_t cut = tail_ - tail_ % kRingPageSize + pages * kRingPageSize;
  if (pages < size_ / kRingPageSize && head_ > cut) return PageTime(cut);
  // The page the producer fills, unless reading has begun in it.
  const uint64_t open = head_ - head_ % kRingPageSize;
  if (!hold_open_page || head_ == open || open < tail_) return UINT64_MAX;
  const uint64_t started = PageTime(open);
  return started >= held_if_since ? started : UINT64_MAX;
}

void RingReader::PublishTail() {
  if (tail_ == published_tail_) return;
  header_->tail.store(tail_, std::memory_order_release);
  published_tail_ = tail_;
}

void RingReader::SetWriterWait(uint32_t ms) {
  header_->full_wait_ms.store(ms, std::memory_order_relaxed);
  writer_may_wait_ = ms != 0;
  // A writer may still be waiting under the old setting: let it look again.
  if (!writer_may_wait_) WakeWaitingWriter();
}

void RingReader::WakeWaitingWriter() {
  // The tail store must be visible before the flag is read: the writer sets
  // the flag, then re-reads the tail (seq_cst on both sides).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (header_->writer_waiting.load(std::memory_order_relaxed) == 0) return;
  // Free space by our head snapshot, which may be older than the writer's
  // head: a wake-up too early only costs the writer another wait.
  const uint64_t used = head_ - tail_;
  if (used != 0 && size_ - used < size_ / 8) return;
  if (header_->writer_waiting.exchange(0, std::memory_order_relaxed) != 0) FutexWake(&header_->writer_waiting);
}

uint64_t RingReader::TakeLost() {
  // The losses since the last read happened between the two reads of the
  // counter, so the clock is read before this one and after it: a reader
  // preempted next to a read must not count less time than passed.
  const uint64_t before = base::MonotonicNs();
  const uint64_t lost = header_->lost.load(std::memory_order_relaxed);
  const uint64_t after = base::MonotonicNs();
  const uint64_t possible = (after - lost_checked_ns_) * kMaxLostPerNs + kLostSlack;
  lost_checked_ns_ = before;
  if (lost <= lost_seen_) return 0;
  // A larger jump is a lie (or garbage): count what could have been lost.
  const uint64_t increase = std::min(lost - lost_seen_, possible);
  lost_seen_ = lost;
  header_->lost_taken.store(lost, std::memory_order_relaxed);
  return increase;
}

void RingReader::DiscardData() {
  PublishTail();  // the thread lets the ring go once it sees it drained
  madvise(const_cast<uint8_t*>(data_), size_, MADV_REMOVE);
}

bool RingReader::closed() const { return header_->closed.load(std::memory_order_acquire) != 0; }

bool RingReader::empty() const {
  // seq_cst: ordered after the seq_cst store of SetConsumerSleeping(true).
  return broken_ || (tail_ == head_ && header_->head.load(std::memory_order_seq_cst) == tail_);
}

void RingReader::SetConsumerSleeping(bool sleeping) {
  if (sleeping) {
    header_->consumer_sleeping.store(kConsumerSleeps, std::memory_order_seq_cst);
  } else {
    header_->consumer_sleeping.store(kConsumerAwake, std::memory_order_relaxed);
  }
}

bool RingReader::SetConsumerDozing(bool dozing) {
  // A ring of one page cannot poke: it opens a page only once all is read.
  if (!wakes_dozing_consumer_ || size_ < 2 * kRingPageSize) return !dozing;
  // Written only when it changes: the producer reads this line at every
  // commit, and a write takes it from the producer's cache.
  const uint32_t want = dozing ? kConsumerDozes : kConsumerAwake;
  if (header_->consumer_sleeping.load(std::memory_order_relaxed) != want) {
    header_->consumer_sleeping.store(want, std::memory_order_relaxed);
  }
  return true;
}

}  // namespace udiag::ring
