// ByteStreamFile: after every Sync the file holds exactly the bytes
// appended so far, however they were cut, in a regular file (whole blocks
// by direct I/O where the file system takes it) and through a pipe; a
// failed write reaches Sync.
#include "record/byte_stream_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "base/scoped_fd.h"
#include "record/tracedat/test_trace.h"

namespace udiag::record {
namespace {

std::string ReadFile(const std::string& path) {
  base::ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::string bytes;
  char buffer[65536];
  for (ssize_t n; (n = ::read(fd.get(), buffer, sizeof(buffer))) > 0;) bytes.append(buffer, n);
  return bytes;
}

// Appends `bytes` to `file` in pieces of random sizes, some through Room
// and Grew, some through Append.
void AppendInPieces(ByteStreamFile& file, std::string_view bytes, std::mt19937& random) {
  while (!bytes.empty()) {
    const size_t piece = std::min<size_t>(bytes.size(), random() % 3 == 0 ? random() % 300000 : random() % 200);
    if (random() % 2) {
      char* at = file.Room(piece + random() % 100);
      std::memcpy(at, bytes.data(), piece);
      file.Grew(at + piece);
    } else {
      file.Append(bytes.substr(0, piece));
    }
    bytes.remove_prefix(piece);
  }
}

std::string RandomBytes(size_t size, std::mt19937& random) {
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(random());
  return bytes;
}

TEST(ByteStreamFileTest, ARegularFileHoldsEveryByteAppendedAtEachSync) {
  tracedat::testing::TempDir dir;
  const std::string path = dir.path() + "/stream";
  ByteStreamFile file(base::ScopedFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)));
  std::mt19937 random(7);
  std::string expected;
  // Syncs after less than a block, after several blocks and a part, after
  // nothing new, and after exactly a block's worth.
  for (size_t size : {size_t{1000}, size_t{3'500'123}, size_t{0}, size_t{4096}, size_t{BlockWriter::kBlockBytes},
                      size_t{777'777}}) {
    const std::string bytes = RandomBytes(size, random);
    AppendInPieces(file, bytes, random);
    expected += bytes;
    ASSERT_EQ(file.Sync(), 0);
    const std::string written = ReadFile(path);
    ASSERT_EQ(written.size(), expected.size());
    ASSERT_TRUE(written == expected) << "after " << expected.size() << " bytes";
  }
  const std::string last = RandomBytes(12345, random);
  AppendInPieces(file, last, random);
  ASSERT_EQ(file.Close(), 0);
  EXPECT_TRUE(ReadFile(path) == expected + last);
}

TEST(ByteStreamFileTest, APipeGetsEveryByteOnceInOrder) {
  int ends[2];
  ASSERT_EQ(::pipe2(ends, O_CLOEXEC), 0);
  base::ScopedFd read_end(ends[0]);
  std::string received;
  std::thread reader([&] {
    char buffer[65536];
    for (ssize_t n; (n = ::read(read_end.get(), buffer, sizeof(buffer))) > 0;) received.append(buffer, n);
  });
  std::mt19937 random(8);
  std::string expected;
  {
    ByteStreamFile file{base::ScopedFd(ends[1])};
    for (size_t size : {size_t{100}, size_t{2'500'000}, size_t{5000}}) {
      const std::string bytes = RandomBytes(size, random);
      AppendInPieces(file, bytes, random);
      expected += bytes;
      EXPECT_EQ(file.Sync(), 0);
    }
    EXPECT_EQ(file.Close(), 0);
  }
  reader.join();
  EXPECT_EQ(received.size(), expected.size());
  EXPECT_TRUE(received == expected);
}

TEST(ByteStreamFileTest, AFailedWriteReachesSync) {
  base::ScopedFd full(::open("/dev/full", O_WRONLY | O_CLOEXEC));
  if (!full.valid()) GTEST_SKIP() << "no /dev/full";
  ByteStreamFile file(std::move(full));
  file.Append("some bytes");
  EXPECT_EQ(file.Sync(), ENOSPC);
  EXPECT_EQ(file.Close(), ENOSPC);
}

}  // namespace
}  // namespace udiag::record
