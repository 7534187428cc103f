#include "service/page_file_writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace udiag::service {
namespace {

constexpr uint64_t kRegionBytes = uint64_t{1} << 32;
constexpr size_t kPage = PageFileWriter::kPageBytes;

// An unlinked file in the build's temporary directory, open for writing.
base::ScopedFd TemporaryFile(int flags = O_RDWR) {
  std::string name = ::testing::TempDir() + "/page_file_XXXXXX";
  int fd = ::mkstemp(name.data());
  EXPECT_GE(fd, 0);
  ::unlink(name.c_str());
  if (flags == O_RDWR) return base::ScopedFd(fd);
  base::ScopedFd reopened(::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), flags));
  ::close(fd);
  return reopened;
}

class PageFileWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    wake_.Reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    base::ScopedFd fd = TemporaryFile();
    file_ = fd.get();
    auto opened = PageFileWriter::Open(base::ScopedFd(::dup(fd.get())), kRegionBytes, 2, wake_.get());
    ASSERT_TRUE(opened.ok()) << opened.error();
    writer_ = std::move(opened).value();
    kept_ = std::move(fd);
  }

  // A lent page of `cpu` filled with `mark`.
  uint8_t* PageMarked(uint8_t mark, uint32_t cpu = 0) {
    uint8_t* page = writer_->Lend(cpu);
    EXPECT_NE(page, nullptr);
    if (page) std::memset(page, mark, kPage);
    return page;
  }

  // Waits (10 s at most) until nothing is queued or being written.
  void WaitIdle() {
    for (int i = 0; i < 10000 && !writer_->Idle(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_TRUE(writer_->Idle());
  }

  // The mark of page `index` of `cpu`'s region.
  uint8_t MarkAt(uint32_t cpu, uint64_t index) {
    uint8_t page[kPage];
    EXPECT_EQ(::pread(file_, page, kPage, static_cast<off_t>((cpu + 1) * kRegionBytes + index * kPage)),
              static_cast<ssize_t>(kPage));
    for (size_t i = 1; i < kPage; ++i) EXPECT_EQ(page[i], page[0]) << "a whole page";
    return page[0];
  }

  base::ScopedFd wake_;
  base::ScopedFd kept_;
  int file_ = -1;
  std::unique_ptr<PageFileWriter> writer_;
};

TEST_F(PageFileWriterTest, PagesGoToTheirCpusRegionInOrder) {
  for (uint8_t i = 0; i < 10; ++i) {
    const uint32_t cpu = i % 3 == 0 ? 1 : 0;
    ASSERT_TRUE(writer_->Append(cpu, PageMarked(i + 1, cpu)));
  }
  writer_->SubmitAll();
  WaitIdle();
  std::vector<PageFileWriter::Progress> progress;
  writer_->TakeProgress(&progress);
  ASSERT_EQ(progress.size(), 2u);
  EXPECT_EQ(progress[0].cpu, 0u);
  EXPECT_EQ(progress[0].bytes, 6 * kPage);
  EXPECT_EQ(progress[1].cpu, 1u);
  EXPECT_EQ(progress[1].bytes, 4 * kPage);
  const uint8_t cpu0[] = {2, 3, 5, 6, 8, 9}, cpu1[] = {1, 4, 7, 10};
  for (size_t i = 0; i < sizeof(cpu0); ++i) EXPECT_EQ(MarkAt(0, i), cpu0[i]);
  for (size_t i = 0; i < sizeof(cpu1); ++i) EXPECT_EQ(MarkAt(1, i), cpu1[i]);
  progress.clear();
  writer_->TakeProgress(&progress);
  EXPECT_TRUE(progress.empty()) << "only what grew since";
  uint64_t wakes = 0;
  EXPECT_EQ(::read(wake_.get(), &wakes, sizeof(wakes)), static_cast<ssize_t>(sizeof(wakes)));
  EXPECT_GE(wakes, 1u) << "the daemon's loop is woken when a write ends";
}

TEST_F(PageFileWriterTest, AFullBlockIsWrittenUnasked) {
  for (size_t i = 0; i < PageFileWriter::kBlockPages; ++i) ASSERT_TRUE(writer_->Append(0, PageMarked(7)));
  WaitIdle();
  std::vector<PageFileWriter::Progress> progress;
  writer_->TakeProgress(&progress);
  ASSERT_EQ(progress.size(), 1u);
  EXPECT_EQ(progress[0].bytes, PageFileWriter::kBlockPages * kPage);
  EXPECT_EQ(MarkAt(0, PageFileWriter::kBlockPages - 1), 7);
}

TEST_F(PageFileWriterTest, EachCpuCutsPagesInAddressOrderFromASlabReusedOnceAllFree) {
  constexpr size_t kSlab = PageFileWriter::kSlabPages;
  std::vector<uint8_t*> first;
  for (size_t i = 0; i < kSlab; ++i) {
    first.push_back(writer_->Lend(0));
    if (i > 0) {
      ASSERT_EQ(first[i], first[i - 1] + kPage) << "one run of memory, for one write segment";
    }
  }
  uint8_t* const other_cpu = writer_->Lend(1);
  EXPECT_TRUE(other_cpu < first[0] || other_cpu >= first[0] + kSlab * kPage) << "a slab of its own";
  for (size_t i = 1; i < kSlab; ++i) writer_->GiveBack(first[i]);
  std::vector<uint8_t*> second;
  for (size_t i = 0; i < kSlab + 1; ++i) second.push_back(writer_->Lend(0));
  for (uint8_t* page : second) {
    EXPECT_FALSE(page >= first[0] && page < first[0] + kSlab * kPage) << "a slab with a page still lent is not cut again";
  }
  writer_->GiveBack(first[0]);
  for (size_t i = 1; i < kSlab; ++i) writer_->Lend(0);  // the rest of the slab being cut
  EXPECT_EQ(writer_->Lend(0), first[0]) << "now it is all free";
}

// A page given back (not taken whole after all) leaves no hole in the run
// of pages a write sends as one segment, when it was the last one cut.
TEST_F(PageFileWriterTest, APageGivenBackRightAfterItWasCutIsCutAgain) {
  uint8_t* const first = writer_->Lend(0);
  uint8_t* const second = writer_->Lend(0);
  ASSERT_EQ(second, first + kPage);
  writer_->GiveBack(second);
  EXPECT_EQ(writer_->Lend(0), second);
  uint8_t* const third = writer_->Lend(0);
  writer_->GiveBack(second);  // cut before the last one: a hole that stays
  EXPECT_EQ(writer_->Lend(0), third + kPage);
}

TEST_F(PageFileWriterTest, LendsNoMoreThanMaxPagesAndCountsWhatIsFree) {
  // Lent to one cpu, every page can be; counted as free for any cpu, all
  // but a slab for each cpu, which a cpu may need before it cuts a page.
  const size_t kCountedFree = PageFileWriter::kMaxPages - 2 * PageFileWriter::kSlabPages;
  EXPECT_EQ(writer_->free_pages(), kCountedFree);
  std::vector<uint8_t*> lent;
  for (size_t i = 0; i < PageFileWriter::kMaxPages; ++i) {
    lent.push_back(writer_->Lend(0));
    ASSERT_NE(lent.back(), nullptr) << i;
  }
  EXPECT_EQ(writer_->free_pages(), 0u);
  EXPECT_EQ(writer_->Lend(0), nullptr);
  EXPECT_EQ(writer_->Lend(1), nullptr);
  for (uint8_t* page : lent) writer_->GiveBack(page);
  EXPECT_EQ(writer_->free_pages(), kCountedFree);
  for (size_t i = 0; i < PageFileWriter::kMaxPages; ++i) ASSERT_NE(writer_->Lend(i % 2), nullptr) << i;
}

TEST_F(PageFileWriterTest, ALargerBufferLendsMorePagesWhileTheDiskIsBehind) {
  // A recording whose buffer (--size) is three times kMaxPages' memory may
  // hold that many pages; a smaller one still gets kMaxPages.
  const size_t pages = 3 * PageFileWriter::kMaxPages;
  auto larger = PageFileWriter::Open(TemporaryFile(), kRegionBytes, 2, wake_.get(), pages * kPage);
  ASSERT_TRUE(larger.ok()) << larger.error();
  EXPECT_EQ((*larger)->free_pages(), pages - 2 * PageFileWriter::kSlabPages);
  for (size_t i = 0; i < pages; ++i) ASSERT_NE((*larger)->Lend(0), nullptr) << i;
  EXPECT_EQ((*larger)->Lend(0), nullptr);
  auto smaller = PageFileWriter::Open(TemporaryFile(), kRegionBytes, 2, wake_.get(), 16 << 20);
  ASSERT_TRUE(smaller.ok()) << smaller.error();
  EXPECT_EQ((*smaller)->free_pages(), PageFileWriter::kMaxPages - 2 * PageFileWriter::kSlabPages);
}

// The first pages lent are in memory faulted in by the writing thread, not
// by the caller's first copy into them.
TEST_F(PageFileWriterTest, TheFirstPagesAreFaultedInByTheWritingThread) {
  void* const probe = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(probe, MAP_FAILED);
  const bool populates = ::madvise(probe, 4096, MADV_POPULATE_WRITE) == 0;
  ::munmap(probe, 4096);
  if (!populates) GTEST_SKIP() << "the kernel has no MADV_POPULATE_WRITE (Linux 5.14)";
  uint8_t* const page = writer_->Lend(0);  // not touched here
  ASSERT_NE(page, nullptr);
  constexpr size_t kChunk = 2 << 20;
  void* const chunk = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(page) & ~(kChunk - 1));
  std::vector<unsigned char> resident(kChunk / static_cast<size_t>(::sysconf(_SC_PAGESIZE)));
  auto all_resident = [&] {
    EXPECT_EQ(::mincore(chunk, kChunk, resident.data()), 0);
    return std::all_of(resident.begin(), resident.end(), [](unsigned char r) { return (r & 1) != 0; });
  };
  for (int i = 0; i < 10000 && !all_resident(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(all_resident());
  writer_->GiveBack(page);
}

// A write's end wakes the owner's loop unless told it need not; a loop
// about to sleep turns the wakes on again and hears of a write that ended
// without one.
TEST_F(PageFileWriterTest, AWriteWakesTheOwnerUnlessToldNotTo) {
  uint64_t wakes = 0;
  ASSERT_TRUE(writer_->Append(0, PageMarked(1)));
  writer_->SubmitAll();
  WaitIdle();
  EXPECT_EQ(::read(wake_.get(), &wakes, sizeof(wakes)), static_cast<ssize_t>(sizeof(wakes))) << "on at first";
  std::vector<PageFileWriter::Progress> progress;
  writer_->TakeProgress(&progress);
  EXPECT_FALSE(writer_->WakeAfterWritesFromNow()) << "nothing ended unseen";

  writer_->SetWakeAfterWrites(false);
  ASSERT_TRUE(writer_->Append(0, PageMarked(2)));
  writer_->SubmitAll();
  WaitIdle();
  EXPECT_EQ(::read(wake_.get(), &wakes, sizeof(wakes)), -1) << "no wake";
  EXPECT_TRUE(writer_->WakeAfterWritesFromNow()) << "the write ended unseen";
  writer_->TakeProgress(&progress);
  EXPECT_FALSE(writer_->WakeAfterWritesFromNow());
  ASSERT_TRUE(writer_->Append(0, PageMarked(3)));
  writer_->SubmitAll();
  WaitIdle();
  EXPECT_EQ(::read(wake_.get(), &wakes, sizeof(wakes)), static_cast<ssize_t>(sizeof(wakes))) << "on again";
}

// The owner waits for pages when Lend has none: the next write's end wakes it.
TEST_F(PageFileWriterTest, ALendWithNoPageTurnsTheWakesOn) {
  writer_->SetWakeAfterWrites(false);
  std::vector<uint8_t*> lent;
  while (uint8_t* page = writer_->Lend(0)) lent.push_back(page);
  EXPECT_TRUE(writer_->LowOnPages());
  ASSERT_TRUE(writer_->Append(0, lent.back()));
  lent.pop_back();
  writer_->SubmitAll();
  WaitIdle();
  uint64_t wakes = 0;
  EXPECT_EQ(::read(wake_.get(), &wakes, sizeof(wakes)), static_cast<ssize_t>(sizeof(wakes)));
  for (uint8_t* page : lent) writer_->GiveBack(page);
  EXPECT_FALSE(writer_->LowOnPages());
}

TEST_F(PageFileWriterTest, AFailedWriteStopsTheFileAndIsReported) {
  // The file may not grow past the first page of cpu 0's region: the second
  // page's write fails (EFBIG), and so do all later ones, unwritten.
  ::signal(SIGXFSZ, SIG_IGN);
  rlimit old;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit limit = old;
  limit.rlim_cur = kRegionBytes + kPage;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  ASSERT_TRUE(writer_->Append(0, PageMarked(1)));
  writer_->SubmitAll();
  WaitIdle();
  ASSERT_TRUE(writer_->Append(0, PageMarked(2)));
  ASSERT_TRUE(writer_->Append(0, PageMarked(3)));
  writer_->SubmitAll();
  WaitIdle();
  ::setrlimit(RLIMIT_FSIZE, &old);
  EXPECT_EQ(writer_->error(), EFBIG);
  std::vector<PageFileWriter::Progress> progress;
  writer_->TakeProgress(&progress);
  ASSERT_EQ(progress.size(), 1u);
  EXPECT_EQ(progress[0].bytes, kPage) << "only the write that succeeded counts";
  EXPECT_FALSE(writer_->Append(1, PageMarked(4, 1))) << "nothing more is written, on any cpu";
}

TEST(PageFileWriterOpenTest, RefusesWhatItCannotWriteRegionsInto) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ::close(pipe_fds[1]);
  auto open = [](base::ScopedFd fd, uint64_t region_bytes, uint32_t cpus) {
    auto opened = PageFileWriter::Open(std::move(fd), region_bytes, cpus, -1);
    return opened.ok() ? 0 : opened.error();
  };
  EXPECT_EQ(open(base::ScopedFd(pipe_fds[0]), kRegionBytes, 2), EBADF) << "not a regular file";
  EXPECT_EQ(open(TemporaryFile(O_RDONLY), kRegionBytes, 2), EBADF) << "not open for writing";
  EXPECT_EQ(open(TemporaryFile(O_WRONLY | O_APPEND), kRegionBytes, 2), EBADF) << "appends ignore the offset";
  EXPECT_EQ(open(TemporaryFile(), kRegionBytes / 2, 2), EINVAL) << "regions are at least 4 GiB";
  EXPECT_EQ(open(TemporaryFile(), kRegionBytes + kPage, 2), EINVAL) << "a power of two";
  EXPECT_EQ(open(TemporaryFile(), kRegionBytes, 0), EINVAL);
  EXPECT_EQ(open(TemporaryFile(), uint64_t{1} << 62, 2), EINVAL) << "the last region would pass 2^63";
  EXPECT_EQ(open(TemporaryFile(O_WRONLY), kRegionBytes, 2), 0);
}

}  // namespace
}  // namespace udiag::service
