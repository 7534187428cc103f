#include "ipc/stream_ring.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <numeric>
#include <vector>

#include "ipc/stream_ring_test_util.h"

namespace udiag::ipc {
namespace {

using testing_util::kSize;
using testing_util::MakePair;
using testing_util::Pair;


void Write(StreamRing& ring, const std::vector<uint8_t>& bytes) {
  ASSERT_GE(ring.Writable(), bytes.size());
  std::memcpy(ring.write_position(), bytes.data(), bytes.size());
  ring.Publish(bytes.size());
}

TEST(StreamRingTest, BytesAcrossTheEndReadBackContiguous) {
  Pair p = MakePair();
  EXPECT_EQ(p.writer->Writable(), kSize);
  EXPECT_TRUE(p.reader->Readable().empty());
  // Move both ends close to the end of the data area, then write across it.
  std::vector<uint8_t> filler(kSize - 100, 7);
  Write(*p.writer, filler);
  ASSERT_EQ(p.reader->Readable().size(), filler.size());
  p.reader->Release(filler.size());
  std::vector<uint8_t> bytes(1000);
  std::iota(bytes.begin(), bytes.end(), 0);
  Write(*p.writer, bytes);
  std::span<const uint8_t> read = p.reader->Readable();
  ASSERT_EQ(read.size(), bytes.size());
  EXPECT_TRUE(std::equal(read.begin(), read.end(), bytes.begin()));
  p.reader->Release(read.size());
  EXPECT_EQ(p.writer->Writable(), kSize);
}

TEST(StreamRingTest, WakeFlagsAreTakenOnce) {
  Pair p = MakePair();
  EXPECT_FALSE(p.reader->SleepUnlessReadable(1));
  EXPECT_TRUE(p.writer->Publish(0)) << "the reader said it sleeps";
  EXPECT_FALSE(p.writer->Publish(0)) << "one wake-up per sleep";
  p.reader->Awake();
  Write(*p.writer, std::vector<uint8_t>(kSize, 1));
  EXPECT_EQ(p.writer->WaitForRoom(), 0u);
  EXPECT_TRUE(p.reader->SleepUnlessReadable(kSize)) << "already readable";
  p.reader->Awake();
  EXPECT_TRUE(p.reader->Release(8)) << "the writer said it waits";
  EXPECT_FALSE(p.reader->Release(8));
  EXPECT_EQ(p.writer->Writable(), 16u);
}

TEST(StreamRingTest, ADozingReaderIsPokedOnceAnEighthOfTheRingIsReadable) {
  Pair p = MakePair();
  EXPECT_FALSE(p.reader->SleepUnlessReadable(1, /*doze=*/true));
  std::memset(p.writer->write_position(), 1, kSize / 8);
  EXPECT_FALSE(p.writer->Publish(kSize / 8 - 1)) << "less than an eighth: no poke";
  EXPECT_EQ(p.reader->Readable().size(), kSize / 8 - 1) << "readable all the same";
  EXPECT_TRUE(p.writer->Publish(1)) << "an eighth is readable";
  EXPECT_FALSE(p.writer->Publish(0)) << "one wake-up per doze";
  p.reader->Awake();
  p.reader->Release(kSize / 8);
  EXPECT_FALSE(p.reader->SleepUnlessReadable(1));
  std::memset(p.writer->write_position(), 2, 1);
  EXPECT_TRUE(p.writer->Publish(1)) << "a sleeping reader is poked at the first byte";
}

TEST(StreamRingTest, AReaderMovingTheTailWronglyBreaksTheWriterOnly) {
  Pair p = MakePair();
  Write(*p.writer, std::vector<uint8_t>(64, 1));
  auto* header = static_cast<StreamRingHeader*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, p.writer->fd(), 0));
  ASSERT_NE(header, MAP_FAILED);
  header->tail.store(65);  // past the head
  EXPECT_EQ(p.writer->Writable(), 0u);
  EXPECT_TRUE(p.writer->broken());
  Pair q = MakePair();
  Write(*q.writer, std::vector<uint8_t>(64, 1));
  q.reader->Release(64);
  EXPECT_EQ(q.writer->Writable(), kSize);
  auto* qheader = static_cast<StreamRingHeader*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, q.writer->fd(), 0));
  ASSERT_NE(qheader, MAP_FAILED);
  qheader->tail.store(8);  // backwards
  EXPECT_EQ(q.writer->Writable(), 0u);
  EXPECT_TRUE(q.writer->broken());
  munmap(header, 4096);
  munmap(qheader, 4096);
}

TEST(StreamRingTest, RefusesWhatIsNotAStreamRing) {
  EXPECT_EQ(StreamRing::Create(kSize + 1).error(), EINVAL);
  EXPECT_EQ(StreamRing::Create(4096).error(), EINVAL);
  base::ScopedFd other(memfd_create("other", MFD_CLOEXEC));
  ASSERT_EQ(ftruncate(other.get(), 4096 + kSize), 0);
  EXPECT_EQ(StreamRing::Map(std::move(other)).error(), EPROTO);
  // The writer's memfd cannot be shrunk under it.
  auto ring = StreamRing::Create(kSize);
  ASSERT_TRUE(ring.ok());
  EXPECT_NE(ftruncate((*ring)->fd(), 4096), 0);
  EXPECT_EQ(StreamRing::Create(kSize, StreamRing::kMaxPoolPages + 1).error(), EINVAL);
}

TEST(StreamRingTest, ThePoolIsSharedAndTheReaderMapsItReadOnly) {
  auto writer = StreamRing::Create(kSize, 3);
  ASSERT_TRUE(writer.ok()) << writer.error();
  auto reader = StreamRing::Map(base::ScopedFd(dup((*writer)->fd())));
  ASSERT_TRUE(reader.ok()) << reader.error();
  ASSERT_EQ((*reader)->pool_pages(), 3u);
  for (uint64_t slot = 0; slot < 3; ++slot) {
    std::memset((*writer)->pool_page(slot), static_cast<int>('a' + slot), StreamRing::kPoolPageSize);
  }
  for (uint64_t slot = 0; slot < 3; ++slot) {
    const uint8_t* page = (*reader)->pool_page(slot);
    EXPECT_EQ(page[0], 'a' + slot);
    EXPECT_EQ(page[StreamRing::kPoolPageSize - 1], 'a' + slot);
  }
  // The ring's bytes are not the pool's.
  Write(**writer, std::vector<uint8_t>(64, 'r'));
  EXPECT_EQ((*reader)->Readable()[0], 'r');
  EXPECT_EQ((*reader)->pool_page(0)[0], 'a');
  // Read-only where the reader maps it: the kernel cannot store into it either.
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  base::ScopedFd out(pipe_fds[0]), in(pipe_fds[1]);
  ASSERT_EQ(write(in.get(), "x", 1), 1);
  errno = 0;
  EXPECT_EQ(read(out.get(), (*reader)->pool_page(0), 1), -1);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(read(out.get(), (*writer)->pool_page(0), 1), 1);
}

TEST(StreamRingTest, APoolThatDisagreesWithTheFileSizeIsRefused) {
  auto ring = StreamRing::Create(kSize, 2);
  ASSERT_TRUE(ring.ok());
  base::ScopedFd copy(memfd_create("copy", MFD_CLOEXEC));
  ASSERT_EQ(ftruncate(copy.get(), 4096 + kSize + 4096), 0);  // one pool page, not two
  std::vector<uint8_t> header(4096);
  ASSERT_EQ(pread((*ring)->fd(), header.data(), header.size(), 0), 4096);
  ASSERT_EQ(pwrite(copy.get(), header.data(), header.size(), 0), 4096);
  EXPECT_EQ(StreamRing::Map(std::move(copy)).error(), EPROTO);
}

}  // namespace
}  // namespace udiag::ipc
