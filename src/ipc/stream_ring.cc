#include "ipc/stream_ring.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <new>

namespace udiag::ipc {
namespace {

constexpr uint64_t kHeaderBytes = 4096;
constexpr uint64_t kMaxDataBytes = uint64_t{1} << 30;

bool ValidSize(uint64_t size) {
  return size >= StreamRing::kMinDataBytes && size <= kMaxDataBytes && (size & (size - 1)) == 0;
}

// After publishing a position: takes the other side's flag if it is set
// (the fence orders the position's store before the flag's load) and
// `wants_poke(the flag's value)` says that side wants its poke now.
template <typename WantsPoke>
bool TakeFlagAfterPublishing(std::atomic<uint32_t>& flag, WantsPoke wants_poke) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const uint32_t value = flag.load(std::memory_order_relaxed);
  return value != 0 && wants_poke(value) && flag.exchange(0, std::memory_order_relaxed) != 0;
}

}  // namespace

StreamRing::StreamRing(base::ScopedFd fd, StreamRingHeader* header, uint8_t* data, uint64_t size, uint8_t* pool,
                       uint64_t pool_pages)
    : fd_(std::move(fd)), header_(header), data_(data), size_(size), pool_(pool), pool_pages_(pool_pages) {}

StreamRing::~StreamRing() {
  if (pool_) munmap(pool_, pool_pages_ * kPoolPageSize);
  munmap(data_, 2 * size_);
  munmap(header_, kHeaderBytes);
}

base::ErrorOr<std::unique_ptr<StreamRing>> StreamRing::MapShared(base::ScopedFd fd, uint64_t size, uint64_t pool_pages,
                                                                 bool writer) {
  void* header = mmap(nullptr, kHeaderBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (header == MAP_FAILED) return base::Errno{errno};
  // Reserve twice the data size, then map the data over both halves.
  void* area = mmap(nullptr, 2 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  int error = area == MAP_FAILED ? errno : 0;
  const int prot = writer ? PROT_READ | PROT_WRITE : PROT_READ;
  for (uint64_t half = 0; error == 0 && half < 2; ++half) {
    void* at = static_cast<uint8_t*>(area) + half * size;
    // Populated now: a page fault per 4 KiB while records stream in cost
    // this guest milliseconds, and producers' rings overflowed meanwhile.
    if (mmap(at, size, prot, MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd.get(), kHeaderBytes) == MAP_FAILED) {
      error = errno;
    }
  }
  void* pool = nullptr;
  if (error == 0 && pool_pages != 0) {
    pool = mmap(nullptr, pool_pages * kPoolPageSize, prot, MAP_SHARED | MAP_POPULATE, fd.get(),
                static_cast<off_t>(kHeaderBytes + size));
    if (pool == MAP_FAILED) {
      error = errno;
      pool = nullptr;
    }
  }
  if (error != 0) {
    if (area != MAP_FAILED) munmap(area, 2 * size);
    munmap(header, kHeaderBytes);
    return base::Errno{error};
  }
  return std::unique_ptr<StreamRing>(new StreamRing(std::move(fd), static_cast<StreamRingHeader*>(header),
                                                    static_cast<uint8_t*>(area), size, static_cast<uint8_t*>(pool),
                                                    pool_pages));
}

base::ErrorOr<std::unique_ptr<StreamRing>> StreamRing::Create(uint64_t data_size, uint64_t pool_pages) {
  if (!ValidSize(data_size) || pool_pages > kMaxPoolPages) return base::Errno{EINVAL};
  base::ScopedFd fd(memfd_create("udiag-stream", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return base::Errno{errno};
  // Sealed: a reader that could shrink it would make our writes fault.
  if (ftruncate(fd.get(), static_cast<off_t>(kHeaderBytes + data_size + pool_pages * kPoolPageSize)) != 0 ||
      fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return base::Errno{errno};
  }
  auto ring = MapShared(std::move(fd), data_size, pool_pages, /*writer=*/true);
  if (!ring.ok()) return ring;
  auto* header = new ((*ring)->header_) StreamRingHeader{};
  header->magic = kStreamRingMagic;
  header->version = kStreamRingVersion;
  header->data_size = data_size;
  header->pool_pages = pool_pages;
  return ring;
}

base::ErrorOr<std::unique_ptr<StreamRing>> StreamRing::Map(base::ScopedFd fd) {
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return base::Errno{errno};
  if (st.st_size < static_cast<off_t>(kHeaderBytes)) return base::Errno{EPROTO};
  struct {
    uint32_t magic;
    uint32_t version;
    uint64_t data_size;
    uint64_t pool_pages;
  } fixed;
  static_assert(offsetof(StreamRingHeader, pool_pages) + sizeof(uint64_t) == sizeof(fixed));
  if (pread(fd.get(), &fixed, sizeof(fixed), 0) != static_cast<ssize_t>(sizeof(fixed))) return base::Errno{EPROTO};
  if (fixed.magic != kStreamRingMagic || fixed.version != kStreamRingVersion || !ValidSize(fixed.data_size) ||
      fixed.pool_pages > kMaxPoolPages ||
      static_cast<uint64_t>(st.st_size) != kHeaderBytes + fixed.data_size + fixed.pool_pages * kPoolPageSize) {
    return base::Errno{EPROTO};
  }
  auto ring = MapShared(std::move(fd), fixed.data_size, fixed.pool_pages, /*writer=*/false);
  if (!ring.ok()) return ring;
  (*ring)->tail_ = (*ring)->head_ = (*ring)->header_->tail.load(std::memory_order_relaxed);
  return ring;
}

uint64_t StreamRing::Writable() {
  if (broken_) return 0;
  const uint64_t tail = header_->tail.load(std::memory_order_acquire);
  if (tail < tail_ || tail > head_) {
    broken_ = true;
    return 0;
  }
  tail_ = tail;
  return size_ - (head_ - tail_);
}

bool StreamRing::Publish(uint64_t n) {
  head_ += n;
  header_->head.store(head_, std::memory_order_release);
  // A dozing reader's tail is where it stopped reading: it reads nothing
  // while it dozes. A tail it moved wrongly only wakes it early.
  return TakeFlagAfterPublishing(header_->reader_sleeping, [&](uint32_t how) {
    return how != kReaderDozes || head_ - header_->tail.load(std::memory_order_acquire) >= size_ / 8;
  });
}

uint64_t StreamRing::WaitForRoom() {
  header_->writer_waiting.store(1, std::memory_order_seq_cst);
  return Writable();
}

std::span<const uint8_t> StreamRing::Readable() {
  const uint64_t head = header_->head.load(std::memory_order_acquire);
  if (head - tail_ > size_) {  // not from our writer: read nothing more
    broken_ = true;
    return {};
  }
  head_ = head;
  return {data_ + (tail_ & (size_ - 1)), head_ - tail_};
}

bool StreamRing::Release(uint64_t n) {
  tail_ += n;
  header_->tail.store(tail_, std::memory_order_release);
  return TakeFlagAfterPublishing(header_->writer_waiting, [](uint32_t) { return true; });
}

bool StreamRing::SleepUnlessReadable(uint64_t want, bool doze) {
  header_->reader_sleeping.store(doze ? kReaderDozes : kReaderSleeps, std::memory_order_seq_cst);
  return Readable().size() >= want;
}

void StreamRing::Awake() { header_->reader_sleeping.store(0, std::memory_order_relaxed); }

}  // namespace udiag::ipc
