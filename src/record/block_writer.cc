#include "record/block_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

namespace udiag::record {
namespace {

// Blocks queued behind the one being written. A shared disk can stall for
// a good part of a second; at 10 M events/s a block fills in about 2 ms, so
// this rides out about 150 ms before the recorder itself has to wait. Only
// kTouchedBlocks are allocated up front; the rest only during such a stall.
constexpr size_t kMaxQueued = 64;
constexpr size_t kTouchedBlocks = 10;
constexpr size_t kHugePageBytes = 2 << 20;
static_assert(kHugePageBytes % BlockWriter::kBlockBytes == 0);

bool DirectIoOn(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && (flags & O_DIRECT) != 0;
}

}  // namespace

void BlockWriter::FreeBlock::operator()(uint8_t* block) const { std::free(block); }

BlockWriter::BlockWriter() : thread_([this] { Run(); }) {}

void BlockWriter::PrepareForStream() {
  if (prepared_) return;
  prepared_ = true;
  // Every block a busy recording cycles through, touched now: a page fault
  // per page in the first second of a recording is a stall it cannot afford.
  std::vector<uint8_t*> blocks;
  for (size_t i = 0; i < kTouchedBlocks; ++i) {
    blocks.push_back(Acquire());
    std::memset(blocks.back(), 0, kBlockBytes);
  }
  for (uint8_t* block : blocks) Release(block);
}

BlockWriter::~BlockWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void BlockWriter::PreferDirectIo(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  // File systems without direct I/O (tmpfs, some FUSE ones) refuse the flag.
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_DIRECT);
}

uint8_t* BlockWriter::Acquire() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !free_.empty() || queue_.size() < kMaxQueued; });
  if (!free_.empty()) {
    uint8_t* block = free_.back();
    free_.pop_back();
    return block;
  }
  // A stream's blocks come in huge pages where the kernel has them
  // (MADV_HUGEPAGE): direct I/O pins a block's memory for every write, a
  // 2 MiB page at a time instead of 4 KiB, and filling a block misses the
  // TLB less. Blocks made before a stream (a few header blocks, when the
  // daemon writes the pages) in small pages: the first touch of a huge page
  // zeroes all of it, 5-7 ms in a VM whose host takes back the guest's free
  // huge pages (free page reporting).
  void* memory = std::aligned_alloc(kHugePageBytes, kHugePageBytes);
  if (!memory) throw std::bad_alloc();
  ::madvise(memory, kHugePageBytes, prepared_ ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  owned_.emplace_back(static_cast<uint8_t*>(memory));
  for (size_t at = kBlockBytes; at < kHugePageBytes; at += kBlockBytes) free_.push_back(owned_.back().get() + at);
  return owned_.back().get();
}

void BlockWriter::Submit(uint8_t* block, int fd, uint64_t offset, size_t bytes, BlockProgress progress) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back({block, fd, offset, bytes, progress});
  }
  changed_.notify_all();
}

void BlockWriter::Release(uint8_t* block) {
  {
    std::lock_guard lock(mutex_);
    free_.push_back(block);
  }
  changed_.notify_all();
}

int BlockWriter::error() {
  std::lock_guard lock(mutex_);
  return error_;
}

uint64_t BlockWriter::Written(size_t slot) {
  std::lock_guard lock(mutex_);
  return slot < written_.size() ? written_[slot] : 0;
}

int BlockWriter::Wait() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return queue_.empty() && !writing_; });
  return error_;
}

void BlockWriter::Run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything is written
    Job job = queue_.front();
    queue_.pop_front();
    writing_ = true;
    bool failed_before = error_ != 0;
    lock.unlock();
    int error = failed_before ? 0 : WriteBlock(job);
    lock.lock();
    writing_ = false;
    if (error != 0 && error_ == 0) error_ = error;
    if (!failed_before && error == 0 && job.progress.slot != BlockProgress::kNone) {
      if (job.progress.slot >= written_.size()) written_.resize(job.progress.slot + 1);
      written_[job.progress.slot] = job.progress.end;
    }
    free_.push_back(job.block);
    changed_.notify_all();
  }
}

int BlockWriter::WriteBlock(const Job& job) {
  for (size_t done = 0; done < job.bytes;) {
    ssize_t n = job.offset == kAtPosition
                    ? ::write(job.fd, job.block + done, job.bytes - done)
                    : ::pwrite(job.fd, job.block + done, job.bytes - done, static_cast<off_t>(job.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EINVAL && DirectIoOn(job.fd)) {
      // Some file systems accept O_DIRECT at open and refuse the write.
      ::fcntl(job.fd, F_SETFL, ::fcntl(job.fd, F_GETFL) & ~O_DIRECT);
      continue;
    }
    if (n < 0) return errno;
    if (n == 0) return EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace udiag::record
