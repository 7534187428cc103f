#include "service/page_file_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <new>

namespace udiag::service {
namespace {

constexpr size_t kChunkBytes = 2 << 20;  // a huge page
constexpr size_t kSlabBytes = PageFileWriter::kSlabPages * PageFileWriter::kPageBytes;
constexpr size_t kSlabsPerChunk = kChunkBytes / kSlabBytes;
static_assert(kChunkBytes % kSlabBytes == 0 && PageFileWriter::kMaxPages * PageFileWriter::kPageBytes % kChunkBytes == 0);
constexpr uint64_t kMinRegionBytes = uint64_t{1} << 32;

bool DirectIoOn(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && (flags & O_DIRECT) != 0;
}

}  // namespace

base::ErrorOr<std::unique_ptr<PageFileWriter>> PageFileWriter::Open(base::ScopedFd fd, uint64_t region_bytes,
                                                                   uint32_t cpus, int wake_fd, uint64_t memory_bytes) {
  struct stat st;
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || flags < 0 || (flags & O_ACCMODE) == O_RDONLY ||
      (flags & O_APPEND) != 0) {
    return base::Errno{EBADF};
  }
  if (region_bytes < kMinRegionBytes || (region_bytes & (region_bytes - 1)) != 0 || cpus == 0 || cpus > 4096 ||
      region_bytes > (uint64_t{1} << 63) / (cpus + 1)) {
    return base::Errno{EINVAL};
  }
  auto shared = std::make_shared<Shared>();
  shared->fd = std::move(fd);
  shared->wake_fd = wake_fd;
  shared->on_disk.assign(cpus, 0);
  shared->grew.assign(cpus, false);
  // Whole chunks: a chunk is the unit memory is taken in.
  const uint64_t chunks = (std::max<uint64_t>(memory_bytes, kMaxPages * kPageBytes) + kChunkBytes - 1) / kChunkBytes;
  return std::unique_ptr<PageFileWriter>(
      new PageFileWriter(std::move(shared), region_bytes, cpus, chunks * kChunkBytes / kPageBytes));
}

PageFileWriter::PageFileWriter(std::shared_ptr<Shared> shared, uint64_t region_bytes, uint32_t cpus,
                               size_t max_pages)
    : shared_(std::move(shared)),
      region_bytes_(region_bytes),
      cpus_(cpus),
      max_slabs_(max_pages / kSlabPages + 2 * size_t{cpus}),
      cutting_(cpus, kNoSlab),
      queued_(cpus) {
  std::vector<uint8_t*> warm;
  while (warm.size() * kChunkBytes < kWarmBytes) {
    uint8_t* chunk = AddChunk();
    if (!chunk) break;
    warm.push_back(chunk);
  }
  thread_ = std::thread(Run, shared_, std::move(warm));
}

PageFileWriter::~PageFileWriter() {
  bool writing;
  {
    std::lock_guard lock(shared_->mutex);
    shared_->stopping = true;
    shared_->queue.clear();
    writing = shared_->writing;
  }
  shared_->changed.notify_all();
  // A write to a stalled file system must not stall the daemon: the thread
  // ends once it returns, and frees the pages then.
  if (writing) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

uint8_t* PageFileWriter::Lend(uint32_t cpu) {
  size_t& slab = cutting_[cpu];
  if (slab == kNoSlab) {
    slab = FreeSlab();
    if (slab == kNoSlab) {
      SetWakeAfterWrites(true);  // the owner waits for a write to end
      SubmitAll();  // what waits to be written frees its slabs soonest
      return nullptr;
    }
    slabs_[slab] = {0, 0, cpu};
  }
  Slab& cut_from = slabs_[slab];
  uint8_t* const page = SlabStart(slab) + kPageBytes * cut_from.cut++;
  ++cut_from.held;
  if (cut_from.cut == kSlabPages) {  // all cut: free again once all written
    cut_from.cpu = kNoCpu;
    slab = kNoSlab;
  }
  return page;
}

size_t PageFileWriter::FreeSlab() {
  TakeBackWritten();
  if (free_slabs_.empty() && !AddChunk()) return kNoSlab;
  const size_t slab = free_slabs_.back();
  free_slabs_.pop_back();
  return slab;
}

uint8_t* PageFileWriter::AddChunk() {
  if (slabs_.size() + kSlabsPerChunk > max_slabs_) return nullptr;
  // Huge pages where the kernel has them: direct I/O pins a write's
  // memory, 2 MiB at a time instead of 4 KiB.
  auto* memory = static_cast<uint8_t*>(std::aligned_alloc(kChunkBytes, kChunkBytes));
  if (!memory) throw std::bad_alloc();
  ::madvise(memory, kChunkBytes, MADV_HUGEPAGE);
  chunk_index_.emplace(memory, shared_->chunks.size());
  shared_->chunks.emplace_back(memory, std::free);
  slabs_.resize(slabs_.size() + kSlabsPerChunk);
  for (size_t slab = slabs_.size(); slab-- > slabs_.size() - kSlabsPerChunk;) free_slabs_.push_back(slab);
  return memory;
}

uint8_t* PageFileWriter::SlabStart(size_t slab) const {
  return shared_->chunks[slab / kSlabsPerChunk].get() + (slab % kSlabsPerChunk) * kSlabBytes;
}

size_t PageFileWriter::SlabOf(const uint8_t* page) const {
  // Chunks are aligned to their size: a page's chunk starts at the
  // alignment below it.
  const auto* chunk = reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(page) & ~(kChunkBytes - 1));
  const auto it = chunk_index_.find(chunk);
  if (it == chunk_index_.end()) return kNoSlab;
  return it->second * kSlabsPerChunk + static_cast<size_t>(page - chunk) / kSlabBytes;
}

bool PageFileWriter::Owns(const uint8_t* page) const { return SlabOf(page) != kNoSlab; }

void PageFileWriter::GiveBack(const uint8_t* page) {
  const size_t slab = SlabOf(page);
  Slab& from = slabs_[slab];
  // The page cut last is cut again next: a hole between the pages written
  // would split their write into one more segment.
  if (from.cpu != kNoCpu && page == SlabStart(slab) + kPageBytes * (from.cut - 1)) --from.cut;
  if (--from.held == 0 && from.cpu == kNoCpu) free_slabs_.push_back(slab);
}

bool PageFileWriter::Append(uint32_t cpu, uint8_t* page) {
  CpuQueue& queue = queued_[cpu];
  if (error_ == 0) error_ = error();
  if (error_ == 0 && queue.submitted + (queue.pages.size() + 1) * kPageBytes > region_bytes_) error_ = EFBIG;
  if (error_ != 0) {
    GiveBack(page);
    return false;
  }
  queue.pages.push_back(page);
  if (queue.pages.size() == kBlockPages) Submit(cpu);
  return true;
}

void PageFileWriter::SubmitAll() {
  for (uint32_t cpu = 0; cpu < cpus_; ++cpu) {
    if (!queued_[cpu].pages.empty()) Submit(cpu);
  }
}

void PageFileWriter::Submit(uint32_t cpu) {
  CpuQueue& queue = queued_[cpu];
  Job job{cpu, (uint64_t{cpu} + 1) * region_bytes_ + queue.submitted, 0, std::move(queue.pages)};
  queue.pages.clear();
  queue.submitted += job.pages.size() * kPageBytes;
  job.end = queue.submitted;
  {
    std::lock_guard lock(shared_->mutex);
    shared_->queue.push_back(std::move(job));
  }
  shared_->changed.notify_all();
}

size_t PageFileWriter::free_pages() {
  TakeBackWritten();
  return PagesForCertainIn((max_slabs_ - slabs_.size()) / kSlabsPerChunk * kSlabsPerChunk + free_slabs_.size());
}

size_t PageFileWriter::PagesForCertainIn(size_t free_slabs) const {
  // Each cpu may need a slab of its own before it cuts a page for certain.
  return free_slabs > cpus_ ? (free_slabs - cpus_) * kSlabPages : 0;
}

bool PageFileWriter::Idle() {
  for (const CpuQueue& queue : queued_) {
    if (!queue.pages.empty()) return false;
  }
  return !Writing();
}

bool PageFileWriter::Writing() {
  std::lock_guard lock(shared_->mutex);
  return !shared_->queue.empty() || shared_->writing;
}

int PageFileWriter::error() {
  if (error_ != 0) return error_;
  return shared_->error.load(std::memory_order_acquire);
}

void PageFileWriter::TakeProgress(std::vector<Progress>* out) {
  std::lock_guard lock(shared_->mutex);
  shared_->ended_unseen = false;
  for (uint32_t cpu = 0; cpu < cpus_; ++cpu) {
    if (!shared_->grew[cpu]) continue;
    shared_->grew[cpu] = false;
    out->push_back({cpu, shared_->on_disk[cpu]});
  }
}

void PageFileWriter::SetWakeAfterWrites(bool wake) { shared_->wake_after_write.store(wake); }

bool PageFileWriter::WakeAfterWritesFromNow() {
  SetWakeAfterWrites(true);
  // A write that ends after this lock is released sees the flag; one that
  // ended before said so here.
  std::lock_guard lock(shared_->mutex);
  return shared_->ended_unseen;
}

bool PageFileWriter::LowOnPages() {
  return free_pages() < PagesForCertainIn(max_slabs_ / kSlabsPerChunk * kSlabsPerChunk) / 2;
}

void PageFileWriter::TakeBackWritten() {
  std::lock_guard lock(shared_->mutex);
  for (const uint8_t* page : shared_->written_pages) GiveBack(page);
  shared_->written_pages.clear();
}

void PageFileWriter::Run(std::shared_ptr<Shared> shared, std::vector<uint8_t*> warm) {
  // Faulted in here rather than by the drain loop's first copies: a huge
  // page's first touch costs a VM milliseconds, long enough for a fast
  // producer's ring to fill. Pages already in use keep their bytes.
  for (uint8_t* chunk : warm) {
    if (std::lock_guard lock(shared->mutex); shared->stopping) return;
    ::madvise(chunk, kChunkBytes, MADV_POPULATE_WRITE);  // Linux 5.14; else the first copy faults
  }
  std::unique_lock lock(shared->mutex);
  for (;;) {
    shared->changed.wait(lock, [&] { return shared->stopping || !shared->queue.empty(); });
    if (shared->stopping) return;
    Job job = std::move(shared->queue.front());
    shared->queue.pop_front();
    shared->writing = true;
    const bool failed_before = shared->error != 0;
    lock.unlock();
    // After a failure nothing more is written: each region on disk stays a
    // prefix of its pages, as the recorder's header says.
    const int error = failed_before ? 0 : WriteJob(shared->fd.get(), job);
    lock.lock();
    shared->writing = false;
    if (error != 0 && shared->error == 0) shared->error = error;
    if (!failed_before && error == 0) {
      shared->on_disk[job.cpu] = job.end;
      shared->grew[job.cpu] = true;
    }
    shared->written_pages.insert(shared->written_pages.end(), job.pages.begin(), job.pages.end());
    shared->ended_unseen = true;
    // Once the writer is gone, so may be the daemon's loop and its eventfd.
    if (!shared->stopping && shared->wake_after_write.load()) {
      const uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(shared->wake_fd, &one, sizeof(one));
    }
  }
}

int PageFileWriter::WriteJob(int fd, const Job& job) {
  // Pages next to each other in memory go as one piece: the kernel pins
  // and maps a piece at a time.
  std::vector<iovec> iov;
  iov.reserve(job.pages.size());
  for (uint8_t* page : job.pages) {
    if (!iov.empty() && static_cast<uint8_t*>(iov.back().iov_base) + iov.back().iov_len == page) {
      iov.back().iov_len += kPageBytes;
    } else {
      iov.push_back({page, kPageBytes});
    }
  }
  size_t first = 0;  // iov[first] onwards is still to write
  uint64_t offset = job.offset;
  while (first < iov.size()) {
    const int count = static_cast<int>(std::min<size_t>(iov.size() - first, IOV_MAX));
    ssize_t n = ::pwritev(fd, iov.data() + first, count, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EINVAL && DirectIoOn(fd)) {
      // Some file systems accept O_DIRECT at open and refuse the write.
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_DIRECT);
      continue;
    }
    if (n < 0) return errno;
    if (n == 0) return EIO;
    offset += static_cast<uint64_t>(n);
    // Past whole pages; a partial one is trimmed and finished next time.
    for (size_t done = static_cast<size_t>(n); done > 0 && first < iov.size();) {
      const size_t step = std::min(done, iov[first].iov_len);
      iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + step;
      iov[first].iov_len -= step;
      done -= step;
      if (iov[first].iov_len == 0) ++first;
    }
  }
  return 0;
}

}  // namespace udiag::service
