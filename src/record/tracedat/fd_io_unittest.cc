// MakeRoomAtFront and MoveUp: the data ends up `gap` bytes further on,
// unchanged, whether the file system shifts extents or we move the bytes.
#include "record/tracedat/fd_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/scoped_fd.h"
#include "record/tracedat/test_trace.h"

namespace udiag::record::tracedat {
namespace {

constexpr size_t kPage = 4096;

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};

// Page-aligned, as MoveUp needs for direct I/O.
std::unique_ptr<uint8_t, FreeDeleter> AlignedBuffer(size_t bytes) {
  return std::unique_ptr<uint8_t, FreeDeleter>(static_cast<uint8_t*>(std::aligned_alloc(kPage, bytes)));
}

std::vector<uint8_t> Pattern(size_t size) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(i * 7 + i / kPage);
  return bytes;
}

// Writes a pattern, makes room for `gap`, and checks the pattern moved intact.
void ExpectDataMovedUp(int fd, size_t size, size_t gap, bool fallback_only) {
  std::vector<uint8_t> data = Pattern(size);
  ASSERT_EQ(WriteAllAt(fd, data, 0), 0);
  auto buffer = AlignedBuffer(16 * kPage);  // smaller than the data: moved in parts
  std::span<uint8_t> span(buffer.get(), 16 * kPage);
  ASSERT_EQ(fallback_only ? MoveUp(fd, size, gap, span) : MakeRoomAtFront(fd, size, gap, span), 0);
  std::vector<uint8_t> moved(size);
  ASSERT_EQ(ReadAllAt(fd, moved, gap), 0);
  EXPECT_TRUE(moved == data);
  EXPECT_EQ(::lseek(fd, 0, SEEK_END), static_cast<off_t>(size + gap));
}

class FdIoTest : public ::testing::Test {
 protected:
  // An unlinked file in `dir`, closed with the test.
  int Open(const std::string& dir) {
    std::string path = dir + "/data-XXXXXX";
    base::ScopedFd& fd = fds_.emplace_back(::mkostemp(path.data(), O_CLOEXEC));
    EXPECT_GE(fd.get(), 0) << dir;
    ::unlink(path.c_str());
    return fd.get();
  }
  testing::TempDir temp_;
  std::vector<base::ScopedFd> fds_;
};

TEST_F(FdIoTest, MoveUpKeepsEveryByteInOrder) {
  ExpectDataMovedUp(Open(temp_.path()), 37 * kPage, 3 * kPage, /*fallback_only=*/true);
}

TEST_F(FdIoTest, MoveUpByMoreThanTheBufferOverlapsNothingWrongly) {
  ExpectDataMovedUp(Open(temp_.path()), 40 * kPage, 21 * kPage, /*fallback_only=*/true);
}

TEST_F(FdIoTest, MakeRoomAtFrontOnThisFileSystem) {
  ExpectDataMovedUp(Open(temp_.path()), 300 * kPage, 2 * kPage, /*fallback_only=*/false);
}

TEST_F(FdIoTest, MakeRoomAtFrontInMemory) {
  int fd = fds_.emplace_back(::memfd_create("room", MFD_CLOEXEC)).get();  // tmpfs cannot insert ranges
  ASSERT_GE(fd, 0);
  ExpectDataMovedUp(fd, 50 * kPage, 5 * kPage, /*fallback_only=*/false);
}

TEST_F(FdIoTest, ReadAllAtPastTheEndIsEio) {
  int fd = Open(temp_.path());
  std::vector<uint8_t> bytes(10, 1);
  ASSERT_EQ(WriteAllAt(fd, bytes, 0), 0);
  std::vector<uint8_t> more(20);
  EXPECT_EQ(ReadAllAt(fd, more, 0), EIO);
}

}  // namespace
}  // namespace udiag::record::tracedat
