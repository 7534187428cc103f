// The sparse region layout: probing a file system for it, squeezing the gaps
// out (by the file system or by copying) with the header published after
// every step, and header writes that allocate before they write.
#include "record/tracedat/region_layout.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/scoped_fd.h"
#include "record/fd_io.h"
#include "record/tracedat/test_trace.h"

namespace udiag::record::tracedat {
namespace {

constexpr uint64_t kPage = 4096;

// Page `index` of cpu `cpu`: every byte says which.
std::vector<uint8_t> PageOf(size_t cpu, uint64_t index) {
  return std::vector<uint8_t>(kPage, static_cast<uint8_t>(cpu * 64 + index + 1));
}

class RegionLayoutTest : public ::testing::TestWithParam<bool> {
 protected:
  int Open(const std::string& dir) {
    std::string path = dir + "/regions-XXXXXX";
    base::ScopedFd& fd = fds_.emplace_back(::mkostemp(path.data(), O_CLOEXEC));
    EXPECT_GE(fd.get(), 0) << dir;
    ::unlink(path.c_str());
    return fd.get();
  }
  testing::TempDir temp_;
  std::vector<base::ScopedFd> fds_;
};

TEST_F(RegionLayoutTest, ProbeFindsHugeSparseRegionsAndLeavesTheFileEmpty) {
  for (std::string dir : {temp_.path(), std::string("/dev/shm")}) {
    int fd = Open(dir);
    std::optional<RegionLayout> layout = ProbeRegionLayout(fd, 3);
    ASSERT_TRUE(layout) << dir;
    EXPECT_GE(layout->region_bytes, uint64_t{1} << 32);
    EXPECT_EQ(layout->region_bytes & (layout->region_bytes - 1), 0u) << "a power of two";
    EXPECT_EQ(layout->cpus, 3u);
    EXPECT_EQ(layout->CpuOffset(1), 2 * layout->region_bytes);
    EXPECT_GT(layout->region_bytes, kHeaderBackupOffset);
    EXPECT_EQ(::lseek(fd, 0, SEEK_END), 0);
  }
}

TEST_F(RegionLayoutTest, ProbeRefusesWhatIsNotAnEmptyRegularFile) {
  int fd = Open(temp_.path());
  ASSERT_EQ(::write(fd, "x", 1), 1);
  EXPECT_FALSE(ProbeRegionLayout(fd, 2));
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  EXPECT_FALSE(ProbeRegionLayout(pipe_fds[1], 2));
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

// Three cpus far apart in a sparse file (cpu 1 empty), compacted: every
// page follows the header in cpu order, each publish names pages that are
// really where it says, and the file ends with the last page.
TEST_P(RegionLayoutTest, CompactionKeepsEveryPageAndPublishesTruthAtEachStep) {
  const bool collapse = GetParam();
  int fd = Open(temp_.path());
  const uint64_t region = uint64_t{1} << 32;
  const std::vector<uint64_t> pages = {3, 0, 5};
  std::vector<CpuData> table(pages.size());
  for (size_t cpu = 0; cpu < pages.size(); ++cpu) {
    table[cpu] = {(cpu + 1) * region, pages[cpu] * kPage};
    for (uint64_t i = 0; i < pages[cpu]; ++i) ASSERT_EQ(WriteAllAt(fd, PageOf(cpu, i), table[cpu].offset + i * kPage), 0);
  }
  // Garbage after cpu 0's last page (a torn write) is dropped with the gap.
  ASSERT_EQ(WriteAllAt(fd, std::vector<uint8_t>(kPage, 0xee), table[0].offset + 3 * kPage), 0);

  auto check = [&](const std::vector<CpuData>& now) {
    for (size_t cpu = 0; cpu < now.size(); ++cpu) {
      for (uint64_t i = 0; i < now[cpu].size / kPage; ++i) {
        std::vector<uint8_t> got(kPage);
        EXPECT_EQ(ReadAllAt(fd, got, now[cpu].offset + i * kPage), 0);
        EXPECT_EQ(got, PageOf(cpu, i)) << "cpu " << cpu << " page " << i;
      }
    }
  };
  int publishes = 0;
  auto publish = [&](const std::vector<CpuData>& now) {
    ++publishes;
    check(now);
    return 0;
  };
  const uint64_t data_start = 2 * kPage;
  ASSERT_EQ(CompactRegions(fd, data_start, &table, publish, collapse), 0);
  EXPECT_GE(publishes, 2);
  EXPECT_EQ(table[0].offset, data_start);
  EXPECT_EQ(table[2].offset, data_start + 3 * kPage);
  EXPECT_EQ(table[1].size, 0u);
  EXPECT_EQ(::lseek(fd, 0, SEEK_END), static_cast<off_t>(data_start + 8 * kPage));
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  EXPECT_LE(static_cast<uint64_t>(st.st_blocks) * 512, 64 * kPage) << "old places were freed";
  check(table);
}

INSTANTIATE_TEST_SUITE_P(ByFileSystemOrByCopy, RegionLayoutTest, ::testing::Bool());

TEST_F(RegionLayoutTest, HeaderBytesArePaddedAndWrittenWhateverDirectIo) {
  int fd = Open(temp_.path());
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_DIRECT);  // refused on some file systems: fine
  ASSERT_EQ(WriteHeaderBytes(fd, "header", 0), 0);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_DIRECT);
  std::vector<uint8_t> got(kPage);
  ASSERT_EQ(ReadAllAt(fd, got, 0), 0);
  EXPECT_EQ(std::string(got.begin(), got.begin() + 6), "header");
  EXPECT_EQ(got[6], 0);
  std::vector<uint8_t> round_trip = {1, 2, 3};
  ASSERT_EQ(WriteAllAt(fd, round_trip, 10), 0);
  std::vector<uint8_t> back(3);
  ASSERT_EQ(ReadAllAt(fd, back, 10), 0);
  EXPECT_EQ(back, round_trip);
  EXPECT_EQ(ReadAllAt(fd, back, kPage), EIO) << "reading past the end";
}

}  // namespace
}  // namespace udiag::record::tracedat
