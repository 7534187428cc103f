#include "ring/ring_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "gtest/gtest.h"
#include "ring/ring_test_util.h"

namespace udiag::ring {
namespace {

RecordHeader HeaderAt(const TestRing& ring, uint64_t pos) {
  RecordHeader header;
  std::memcpy(&header, ring.data() + pos, sizeof(header));
  return header;
}

TEST(CreateRingTest, RefusesBadSizes) {
  RingMapping mapping{};
  for (uint32_t size : {0u, 1u, 2048u, 4095u, 4097u, 12288u, kMaxDataSize * 2}) {
    EXPECT_EQ(CreateRing(size, 1, ClockDomain::kTsc, &mapping), EINVAL) << size;
  }
}

TEST(CreateRingTest, InitializesAndSeals) {
  TestRing ring(8192, ClockDomain::kMonotonic, 1234);
  ASSERT_NE(ring.base(), nullptr);
  const RingHeader* header = ring.header();
  EXPECT_EQ(header->magic, kRingMagic);
  EXPECT_EQ(header->version, kRingVersion);
  EXPECT_EQ(header->data_size, 8192u);
  EXPECT_EQ(header->tid, 1234u);
  EXPECT_EQ(header->clock, static_cast<uint32_t>(ClockDomain::kMonotonic));
  EXPECT_EQ(header->head.load(), 0u);
  EXPECT_EQ(header->tail.load(), 0u);
  EXPECT_EQ(header->lost.load(), 0u);

  struct stat st;
  ASSERT_EQ(fstat(ring.fd(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), kHeaderBytes + 8192);
  EXPECT_EQ(fcntl(ring.fd(), F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  EXPECT_NE(fcntl(ring.fd(), F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_NE(ftruncate(ring.fd(), 0), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(ftruncate(ring.fd(), kHeaderBytes + 16384), 0);
  EXPECT_EQ(errno, EPERM);
}

TEST(RingWriterTest, ReserveFillsHeaderAndCommitPublishes) {
  TestRing ring(4096);
  RingWriter writer;
  EXPECT_FALSE(writer.attached());
  writer.Attach(ring.base());
  EXPECT_TRUE(writer.attached());

  uint8_t* payload = writer.Reserve(5, 7, 3, 0x1122334455667788);
  ASSERT_EQ(payload, ring.data() + sizeof(RecordHeader));
  std::memcpy(payload, "hello", 5);
  EXPECT_EQ(ring.header()->head.load(), 0u) << "visible before Commit";
  EXPECT_FALSE(writer.Commit());
  EXPECT_EQ(ring.header()->head.load(), 24u) << "16 + 5 rounded up to 8";

  const RecordHeader header = HeaderAt(ring, 0);
  EXPECT_EQ(header.size, 21u);
  EXPECT_EQ(header.type, 7);
  EXPECT_EQ(header.cpu, 3);
  EXPECT_EQ(header.timestamp, 0x1122334455667788u);
  EXPECT_EQ(std::memcmp(ring.data() + 16, "hello", 5), 0);

  ASSERT_EQ(writer.Reserve(0, 8, 0, 0), ring.data() + 24 + sizeof(RecordHeader));
  writer.Commit();
  EXPECT_EQ(ring.header()->head.load(), 40u);
}

TEST(RingWriterTest, OversizedPayloadIsLost) {
  TestRing ring(8192);
  RingWriter writer;
  writer.Attach(ring.base());
  EXPECT_EQ(writer.Reserve(kMaxPayload + 1, 1, 0, 0), nullptr);
  EXPECT_EQ(ring.header()->lost.load(), 1u);
  EXPECT_NE(writer.Reserve(kMaxPayload, 1, 0, 0), nullptr);
  writer.Commit();
  EXPECT_EQ(ring.header()->head.load(), AlignRecord(16 + kMaxPayload));
  EXPECT_EQ(ring.header()->lost.load(), 1u);
}

TEST(RingWriterTest, FullRingDropsUntilTailMoves) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  for (int i = 0; i < 4096 / 64; ++i) {
    ASSERT_NE(writer.Reserve(48, 1, 0, i), nullptr) << i;
    writer.Commit();
  }
  EXPECT_EQ(ring.header()->head.load(), 4096u);
  EXPECT_EQ(writer.Reserve(0, 1, 0, 0), nullptr);
  EXPECT_EQ(writer.Reserve(48, 1, 0, 0), nullptr);
  EXPECT_EQ(ring.header()->lost.load(), 2u);

  // The consumer frees one record: exactly that much fits again.
  ring.header()->tail.store(64);
  ASSERT_EQ(writer.Reserve(48, 1, 0, 0), ring.data() + sizeof(RecordHeader));
  writer.Commit();
  EXPECT_EQ(writer.Reserve(0, 1, 0, 0), nullptr);
  EXPECT_EQ(ring.header()->lost.load(), 3u);
}

// With full_wait_ms set, a full ring makes the writer wait that long before
// dropping; after a wait that timed out it drops at once until the tail moves.
TEST(RingWriterTest, FullRingWaitsOnceUntilTheTailMoves) {
  constexpr uint32_t kWaitMs = 200;
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  ring.header()->full_wait_ms.store(kWaitMs);
  auto fill = [&] {
    while (ring.header()->head.load() - ring.header()->tail.load() < 4096) {
      ASSERT_NE(writer.Reserve(48, 1, 0, 0), nullptr);
      writer.Commit();
    }
  };
  auto timed_reserve_ms = [&] {
    const uint64_t start = base::MonotonicNs();
    EXPECT_EQ(writer.Reserve(48, 1, 0, 0), nullptr);
    return (base::MonotonicNs() - start) / 1'000'000;
  };
  fill();
  EXPECT_GE(timed_reserve_ms(), kWaitMs);
  EXPECT_EQ(ring.header()->writer_waiting.load(), 0u) << "left set after the wait";
  EXPECT_LT(timed_reserve_ms(), kWaitMs) << "waited again although nothing was consumed";
  EXPECT_EQ(ring.header()->lost.load(), 2u);

  ring.header()->tail.store(ring.header()->head.load());  // the consumer catches up
  fill();
  EXPECT_GE(timed_reserve_ms(), kWaitMs) << "the tail moved: a full ring is waited for again";

  ring.header()->full_wait_ms.store(0);
  ring.header()->tail.store(ring.header()->head.load());
  fill();
  EXPECT_LT(timed_reserve_ms(), kWaitMs);
  EXPECT_EQ(ring.header()->lost.load(), 4u);
}

TEST(RingWriterTest, BogusTailKeepsRingFull) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  ring.header()->tail.store(1'000'000);  // ahead of head
  EXPECT_EQ(writer.Reserve(8, 1, 0, 0), nullptr);
  ring.header()->tail.store(0);
  ASSERT_NE(writer.Reserve(8, 1, 0, 0), nullptr);
  writer.Commit();
}

TEST(RingWriterTest, WrapsWithPadding) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  // Leave 40 bytes before the end.
  ASSERT_NE(writer.Reserve(4096 - 40 - 16, 1, 0, 0), nullptr);
  writer.Commit();
  ring.header()->tail.store(4096 - 40);  // consumed

  ASSERT_EQ(writer.Reserve(32, 2, 5, 99), ring.data() + sizeof(RecordHeader));
  writer.Commit();
  const RecordHeader padding = HeaderAt(ring, 4096 - 40);
  EXPECT_EQ(padding.type, kPaddingType);
  EXPECT_EQ(padding.size, 40u);
  const RecordHeader record = HeaderAt(ring, 0);
  EXPECT_EQ(record.type, 2);
  EXPECT_EQ(record.size, 48u);
  EXPECT_EQ(record.timestamp, 99u);
  EXPECT_EQ(ring.header()->head.load(), 4096u + 48);
}

TEST(RingWriterTest, PaddingOfEightBytesAtTheVeryEnd) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  ASSERT_NE(writer.Reserve(4000, 1, 0, 0), nullptr);
  writer.Commit();
  ASSERT_NE(writer.Reserve(4096 - 8 - 4016 - 16, 1, 0, 0), nullptr);
  writer.Commit();
  ASSERT_EQ(ring.header()->head.load(), 4096u - 8);
  ring.header()->tail.store(4096 - 8);
  // Writing a 16-byte padding header here would run off the mapping.
  ASSERT_EQ(writer.Reserve(0, 2, 0, 0), ring.data() + sizeof(RecordHeader));
  writer.Commit();
  uint32_t padding_size;
  uint16_t padding_type;
  std::memcpy(&padding_size, ring.data() + 4096 - 8, 4);
  std::memcpy(&padding_type, ring.data() + 4096 - 4, 2);
  EXPECT_EQ(padding_size, 8u);
  EXPECT_EQ(padding_type, kPaddingType);
  EXPECT_EQ(ring.header()->head.load(), 4096u + 16);
}

TEST(RingWriterTest, LargeRecordFitsSmallRingOnceConsumerCatchesUp) {
  // After a 2000-byte record, a 3000-byte one needs 2096 bytes of padding
  // first: 5096 bytes, more than the 4 KiB ring. Published alone, the
  // padding lets the record in once the consumer has read it: one drop, not
  // a ring stuck for good.
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  for (int i = 0; i < 100; ++i) {
    const uint32_t len = i % 2 == 0 ? 1984 : 2984;
    if (writer.Reserve(len, 1, 0, i) == nullptr) {
      ring.header()->tail.store(ring.header()->head.load());
      ASSERT_NE(writer.Reserve(len, 1, 0, i), nullptr) << i;
    }
    writer.Commit();
    ring.header()->tail.store(ring.header()->head.load());
  }
  EXPECT_EQ(ring.header()->lost.load(), 50u) << "one per 3000-byte record";
}

TEST(RingWriterTest, AbandonPublishesNothing) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  uint8_t* first = writer.Reserve(16, 1, 0, 0);
  ASSERT_NE(first, nullptr);
  writer.Abandon();
  EXPECT_EQ(ring.header()->head.load(), 0u);
  EXPECT_EQ(ring.header()->lost.load(), 0u);
  EXPECT_EQ(writer.Reserve(16, 2, 0, 0), first);
  writer.Commit();
  EXPECT_EQ(ring.header()->head.load(), 32u);
  EXPECT_EQ(HeaderAt(ring, 0).type, 2);
}

TEST(RingWriterTest, CommitWakesSleepingConsumerOnce) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  ring.header()->consumer_sleeping.store(1);
  ASSERT_NE(writer.Reserve(0, 1, 0, 0), nullptr);
  EXPECT_TRUE(writer.Commit());
  EXPECT_EQ(ring.header()->consumer_sleeping.load(), 0u);
  ASSERT_NE(writer.Reserve(0, 1, 0, 0), nullptr);
  EXPECT_FALSE(writer.Commit());
}

TEST(RingWriterTest, ReattachContinuesAtHead) {
  TestRing ring(4096);
  {
    RingWriter writer;
    writer.Attach(ring.base());
    ASSERT_NE(writer.Reserve(8, 1, 0, 0), nullptr);
    writer.Commit();
  }
  RingWriter writer;
  writer.Attach(ring.base());
  ASSERT_EQ(writer.Reserve(8, 1, 0, 0), ring.data() + 24 + sizeof(RecordHeader));
  writer.Commit();
  EXPECT_EQ(ring.header()->head.load(), 48u);
}

TEST(RingWriterTest, MarkClosed) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  EXPECT_EQ(ring.header()->closed.load(), 0u);
  writer.MarkClosed();
  EXPECT_EQ(ring.header()->closed.load(), 1u);
}

}  // namespace
}  // namespace udiag::ring
