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
}

}  // namespace
}  // namespace udiag::ipc
