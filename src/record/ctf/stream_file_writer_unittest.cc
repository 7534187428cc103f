// Stream files as StreamFileWriter leaves them: whole packets, each padded
// to whole blocks, the same bytes whether the file takes direct I/O or not.

#include "record/ctf/stream_file_writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "record/ctf/test_support.h"

namespace udiag::record::ctf {
namespace {

constexpr std::array<uint8_t, kUuidSize> kUuid = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Writes the same events as a recording would: packets cut when full, one
// flushed early (a checkpoint), a loss, and the close.
void WriteEvents(const std::string& path, int extra_flags) {
  base::ScopedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | extra_flags, 0644));
  ASSERT_TRUE(fd) << strerror(errno);
  BlockWriter blocks;
  StreamFileWriter writer(std::move(fd), 3, kUuid, &blocks);
  std::vector<uint8_t> event(100);
  for (uint64_t i = 0; i < 30000; ++i) {
    std::memcpy(event.data(), &i, sizeof(i));
    // Room for more than the event takes, as for an event with strings.
    uint8_t* at = writer.BeginEvent(1000 + i, i == 20000 ? 5 : 0, event.size() + 50);
    std::memcpy(at, event.data(), event.size());
    writer.EndEvent(1000 + i, event.size());
    if (i == 100) {
      ASSERT_EQ(writer.Flush(), 0);
    }
  }
  ASSERT_EQ(writer.Close(1000), 0);
}

TEST(StreamFileWriterTest, PacketsArePaddedToWholeBlocksAndSayHowMuchIsContent) {
  ScratchDir scratch;
  const std::string path = scratch.path() + "/stream_3";
  WriteEvents(path, O_DIRECT);
  const std::vector<uint8_t> file = ReadAll(path);
  ASSERT_FALSE(file.empty());
  ASSERT_EQ(file.size() % StreamFileWriter::kBlockBytes, 0u);
  size_t at = 0, packets = 0;
  uint64_t content_total = 0;
  while (at < file.size()) {
    uint32_t magic;
    uint64_t content_bits, packet_bits;
    std::memcpy(&magic, file.data() + at + kMagicAt, sizeof(magic));
    std::memcpy(&content_bits, file.data() + at + kContentSizeAt, sizeof(content_bits));
    std::memcpy(&packet_bits, file.data() + at + kPacketSizeAt, sizeof(packet_bits));
    ASSERT_EQ(magic, kPacketMagic) << "packet " << packets;
    const size_t content = content_bits / 8, size = packet_bits / 8;
    ASSERT_EQ(size % StreamFileWriter::kBlockBytes, 0u);
    ASSERT_LE(content, size);
    ASSERT_GT(content + StreamFileWriter::kBlockBytes, size) << "no more padding than a block";
    ASSERT_LE(at + size, file.size());
    for (size_t i = at + content; i < at + size; ++i) ASSERT_EQ(file[i], 0) << "padding at " << i;
    content_total += content - kPacketPreambleSize;
    at += size;
    ++packets;
  }
  EXPECT_EQ(content_total, 30000u * 100);
  EXPECT_GE(packets, 4u) << "the early flush, the loss's new packet, a full one and the rest";
}

TEST(StreamFileWriterTest, DirectIoAndBufferedWritesLeaveTheSameFile) {
  ScratchDir scratch;
  WriteEvents(scratch.path() + "/direct", O_DIRECT);
  WriteEvents(scratch.path() + "/buffered", 0);
  EXPECT_EQ(ReadAll(scratch.path() + "/direct"), ReadAll(scratch.path() + "/buffered"));
}

}  // namespace
}  // namespace udiag::record::ctf
