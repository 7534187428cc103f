// BlockWriter: blocks land at their offsets or in submit order, through
// direct I/O or the page cache, and write errors reach Wait.
#include "record/block_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/scoped_fd.h"
#include "record/tracedat/test_trace.h"

namespace udiag::record {
namespace {

constexpr size_t kBlock = BlockWriter::kBlockBytes;

std::vector<uint8_t> ReadWhole(int fd, size_t size) {
  // Through the page cache: the vector is not aligned for direct I/O.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_DIRECT);
  std::vector<uint8_t> bytes(size);
  EXPECT_EQ(::pread(fd, bytes.data(), size, 0), static_cast<ssize_t>(size));
  return bytes;
}

// Submits `count` blocks, block i filled with byte i and `bytes` long.
void SubmitNumbered(BlockWriter& writer, int fd, int count, size_t bytes, bool at_position) {
  for (int i = 0; i < count; ++i) {
    uint8_t* block = writer.Acquire();
    std::memset(block, i, bytes);
    writer.Submit(block, fd, at_position ? BlockWriter::kAtPosition : i * bytes, bytes);
  }
}

void ExpectNumbered(const std::vector<uint8_t>& got, int count, size_t bytes) {
  ASSERT_EQ(got.size(), count * bytes);
  for (int i = 0; i < count; ++i) {
    for (size_t j = 0; j < bytes; j += 4096) ASSERT_EQ(got[i * bytes + j], i) << "block " << i;
  }
}

class BlockWriterTest : public ::testing::Test {
 protected:
  int Keep(int fd) {
    EXPECT_GE(fd, 0);
    return fds_.emplace_back(fd).get();
  }
  int OpenFile(const std::string& name) {
    return Keep(::open((temp_.path() + "/" + name).c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  }
  tracedat::testing::TempDir temp_;
  std::vector<base::ScopedFd> fds_;
};

TEST_F(BlockWriterTest, BlocksLandAtTheirOffsetsWithDirectIo) {
  int fd = OpenFile("direct.bin");
  BlockWriter::PreferDirectIo(fd);
  BlockWriter writer;
  SubmitNumbered(writer, fd, 20, kBlock, /*at_position=*/false);  // more than are ever queued
  ASSERT_EQ(writer.Wait(), 0);
  ExpectNumbered(ReadWhole(fd, 20 * kBlock), 20, kBlock);
}

TEST_F(BlockWriterTest, AtPositionWritesInSubmitOrder) {
  int fd = OpenFile("append.bin");
  BlockWriter writer;
  SubmitNumbered(writer, fd, 12, 8192, /*at_position=*/true);
  ASSERT_EQ(writer.Wait(), 0);
  ExpectNumbered(ReadWhole(fd, 12 * 8192), 12, 8192);
  EXPECT_EQ(::lseek(fd, 0, SEEK_CUR), 12 * 8192);
}

TEST_F(BlockWriterTest, MemoryFileWorksWhateverItsDirectIoSupport) {
  int fd = Keep(::memfd_create("blocks", MFD_CLOEXEC));
  BlockWriter::PreferDirectIo(fd);
  BlockWriter writer;
  SubmitNumbered(writer, fd, 3, kBlock, /*at_position=*/false);
  ASSERT_EQ(writer.Wait(), 0);
  ExpectNumbered(ReadWhole(fd, 3 * kBlock), 3, kBlock);
}

TEST_F(BlockWriterTest, WaitReportsTheFirstWriteError) {
  OpenFile("ro.bin");
  int read_only = Keep(::open((temp_.path() + "/ro.bin").c_str(), O_RDONLY | O_CLOEXEC));
  BlockWriter writer;
  SubmitNumbered(writer, read_only, 2, 4096, /*at_position=*/false);
  EXPECT_EQ(writer.Wait(), EBADF);
  // Blocks of failed writes come back for reuse.
  uint8_t* block = writer.Acquire();
  EXPECT_NE(block, nullptr);
  writer.Release(block);
}

TEST_F(BlockWriterTest, WrittenTellsEachSlotsPrefixAndNothingIsWrittenAfterAFailure) {
  int fd = OpenFile("slots.bin");
  OpenFile("ro2.bin");
  int read_only = Keep(::open((temp_.path() + "/ro2.bin").c_str(), O_RDONLY | O_CLOEXEC));
  BlockWriter writer;
  auto submit = [&](int to, uint64_t offset, size_t slot, uint64_t end) {
    uint8_t* block = writer.Acquire();
    std::memset(block, static_cast<int>(end / 4096), 4096);
    writer.Submit(block, to, offset, 4096, {slot, end});
  };
  submit(fd, 0, 0, 4096);
  submit(fd, 4096, 1, 4096);
  submit(fd, 8192, 0, 8192);
  ASSERT_EQ(writer.Wait(), 0);
  EXPECT_EQ(writer.Written(0), 8192u);
  EXPECT_EQ(writer.Written(1), 4096u);
  EXPECT_EQ(writer.Written(7), 0u);

  submit(read_only, 0, 1, 8192);  // fails
  submit(fd, 12288, 0, 12288);     // would succeed, but follows a failure
  EXPECT_EQ(writer.Wait(), EBADF);
  EXPECT_EQ(writer.Written(0), 8192u);
  EXPECT_EQ(writer.Written(1), 4096u);
  EXPECT_EQ(::lseek(fd, 0, SEEK_END), 12288) << "a block after the failure was written";
}

TEST_F(BlockWriterTest, DestructionWaitsForQueuedWrites) {
  int fd = OpenFile("late.bin");
  {
    BlockWriter writer;
    SubmitNumbered(writer, fd, 6, kBlock, /*at_position=*/false);
  }
  ExpectNumbered(ReadWhole(fd, 6 * kBlock), 6, kBlock);
}

// The "THPeligible" value of /proc/self/smaps for the mapping holding `at`
// (1: huge pages may back it), or -1 when there is none.
int ThpEligibleOf(const void* at) {
  std::ifstream smaps("/proc/self/smaps");
  const auto address = reinterpret_cast<uintptr_t>(at);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2) {  // a mapping's first line
      inside = address >= begin && address < end;
    }
    int eligible = 0;
    if (inside && std::sscanf(line.c_str(), "THPeligible: %d", &eligible) == 1) return eligible;
  }
  return -1;
}

// Resident memory of this process, from /proc/self/statm.
size_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t total = 0, resident = 0;
  statm >> total >> resident;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

// A recording whose daemon writes the pages uses its writer for headers
// only: the blocks a stream cycles through are touched once one starts.
TEST_F(BlockWriterTest, BlocksAreTouchedOnlyForAStream) {
  const size_t before = ResidentBytes();
  BlockWriter writer;
  EXPECT_LT(ResidentBytes(), before + 2 * kBlock);
  writer.PrepareForStream();
  EXPECT_GE(ResidentBytes(), before + 8 * kBlock);
  const size_t prepared = ResidentBytes();
  writer.PrepareForStream();
  EXPECT_LT(ResidentBytes(), prepared + kBlock) << "touched once";
}

TEST_F(BlockWriterTest, AStreamsBlocksAreInHugePagesWhereTheKernelHasThem) {
  std::ifstream mode_file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(mode_file, mode);
  if (mode.empty() || mode.find("[never]") != std::string::npos) GTEST_SKIP() << "no transparent huge pages here";
  BlockWriter writer;
  uint8_t* header_block = writer.Acquire();
  EXPECT_EQ(ThpEligibleOf(header_block), 0) << "a block made before any stream: small pages";
  writer.Release(header_block);
  writer.PrepareForStream();
  uint8_t* stream_block = writer.Acquire();  // the last one PrepareForStream made
  EXPECT_EQ(ThpEligibleOf(stream_block), 1);
  writer.Release(stream_block);
}

}  // namespace
}  // namespace udiag::record
