#include "ring/ring_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "gtest/gtest.h"
#include "ring/ring_test_util.h"

namespace udiag::ring {
namespace {

// Positions below are byte-stream positions: a page header (16 bytes), then
// events of a 4-byte word (8 with an explicit length) and their data, the
// 8-byte common header and the payload padded to whole words.

// Writes an event of `len` payload bytes and commits it.
void Write(RingWriter& writer, uint32_t len, uint16_t cpu, uint64_t timestamp) {
  ASSERT_NE(writer.Reserve(len, 1, cpu, timestamp), nullptr) << timestamp;
  writer.Commit();
}

// The commit word of a page closed with `bytes` of events on `cpu`.
constexpr uint64_t ClosedCommit(uint32_t bytes, uint16_t cpu) { return bytes | uint64_t{cpu} << 32; }

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

TEST(RingWriterTest, ReserveWritesPageAndEventHeadersAndCommitPublishes) {
  TestRing ring(4096, ClockDomain::kTsc, 0x89abcdef);
  std::memset(ring.data(), 0xaa, 4096);  // the writer must write its zeros itself
  RingWriter writer;
  EXPECT_FALSE(writer.attached());
  writer.Attach(ring.base());
  EXPECT_TRUE(writer.attached());

  uint8_t* payload = writer.Reserve(5, 7, 3, 0x1122334455667788);
  ASSERT_EQ(payload, ring.data() + 16 + 4 + 8);
  std::memcpy(payload, "hello", 5);
  EXPECT_EQ(ring.header()->head.load(), 0u) << "visible before Commit";
  EXPECT_FALSE(writer.Commit());
  EXPECT_EQ(ring.header()->head.load(), 36u) << "a word, then 8 + 5 bytes of data padded to 16";

  const auto page = ring.Get<PageHeader>(0);
  EXPECT_EQ(page.timestamp, 0x1122334455667788u);
  EXPECT_EQ(page.commit, ClosedCommit(0, 3)) << "cpu 3, and no byte count while the page is open";
  EXPECT_EQ(ring.Get<uint32_t>(16), EventWord(4, 0)) << "4 words of data, at the page's time";
  const auto common = ring.Get<CommonHeader>(20);
  EXPECT_EQ(common.type, 7);
  EXPECT_EQ(common.flags, 0);
  EXPECT_EQ(common.preempt_count, 0);
  EXPECT_EQ(common.tid, static_cast<int32_t>(0x89abcdef));
  EXPECT_EQ(std::memcmp(ring.data() + 28, "hello\0\0\0", 8), 0) << "zero padding";

  ASSERT_EQ(writer.Reserve(0, 8, 3, 0x1122334455667788 + 5), ring.data() + 36 + 4 + 8);
  writer.Commit();
  EXPECT_EQ(ring.header()->head.load(), 48u);
  EXPECT_EQ(ring.Get<uint32_t>(36), EventWord(2, 5)) << "the common header alone, 5 ticks later";
  EXPECT_EQ(ring.Get<CommonHeader>(40).type, 8);
  EXPECT_EQ(ring.Get<PageHeader>(0).commit, ClosedCommit(0, 3)) << "still open";
}

// type_len counts up to 28 words of data; more data takes type_len 0 and
// a length word (the data bytes + 4).
TEST(RingWriterTest, LargerEventsCarryAnExplicitLength) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  ASSERT_EQ(writer.Reserve(104, 1, 0, 0), ring.data() + 16 + 4 + 8);  // 112 bytes of data
  writer.Commit();
  EXPECT_EQ(ring.Get<uint32_t>(16), EventWord(kMaxSmallTypeLen, 0));
  EXPECT_EQ(ring.header()->head.load(), 16u + 116);

  ASSERT_EQ(writer.Reserve(105, 2, 0, 9), ring.data() + 132 + 8 + 8);  // 116 bytes of data
  writer.Commit();
  EXPECT_EQ(ring.Get<uint32_t>(132), EventWord(0, 9));
  EXPECT_EQ(ring.Get<uint32_t>(136), 116u + 4);
  EXPECT_EQ(ring.Get<CommonHeader>(140).type, 2);
  EXPECT_EQ(ring.header()->head.load(), 132u + 124);
}

TEST(RingWriterTest, OversizedPayloadIsLost) {
  TestRing ring(8192);
  RingWriter writer;
  writer.Attach(ring.base());
  EXPECT_EQ(writer.Reserve(kMaxPayload + 1, 1, 0, 0), nullptr);
  EXPECT_EQ(ring.header()->lost.load(), 1u);
  EXPECT_EQ(ring.header()->head.load(), 0u);
  EXPECT_FALSE(writer.TakeOverflow()) << "no ring is large enough for it";
  ASSERT_NE(writer.Reserve(kMaxPayload, 1, 0, 0), nullptr);
  writer.Commit();
  EXPECT_EQ(ring.header()->head.load(), sizeof(PageHeader) + kPageRoom) << "the largest event fills a page";
  EXPECT_EQ(ring.Get<uint32_t>(20), kCommonHeaderBytes + kMaxPayload + 4);
  EXPECT_EQ(ring.header()->lost.load(), 1u);
}

// Every page holds one cpu's events: another cpu closes the page (its byte
// count and cpu in the commit word, head at the next page) and opens the
// next, stamped with its first event's time.
TEST(RingWriterTest, AnotherCpuClosesThePage) {
  TestRing ring(16384);
  RingWriter writer;
  writer.Attach(ring.base());
  Write(writer, 8, 1, 10);
  Write(writer, 8, 1, 11);
  EXPECT_EQ(ring.header()->head.load(), 16u + 2 * 20);

  ASSERT_EQ(writer.Reserve(8, 1, 0x1234, 20), ring.data() + 4096 + 16 + 4 + 8);
  EXPECT_EQ(ring.Get<PageHeader>(0).commit, ClosedCommit(40, 1));
  EXPECT_EQ(ring.header()->head.load(), 4096u) << "page 0 is closed before the event is committed";
  writer.Commit();
  EXPECT_EQ(ring.header()->head.load(), 4096u + 16 + 20);
  EXPECT_EQ(ring.Get<PageHeader>(4096).timestamp, 20u);
  EXPECT_EQ(ring.Get<PageHeader>(4096).commit, ClosedCommit(0, 0x1234));
  EXPECT_EQ(ring.Get<uint32_t>(4096 + 16), EventWord(4, 0));

  Write(writer, 8, 1, 30);
  EXPECT_EQ(ring.Get<PageHeader>(4096).commit, ClosedCommit(20, 0x1234));
  EXPECT_EQ(ring.Get<PageHeader>(8192).timestamp, 30u);
  EXPECT_EQ(ring.Get<PageHeader>(8192).commit, ClosedCommit(0, 1));
  EXPECT_EQ(ring.header()->head.load(), 8192u + 16 + 20);
}

// An event goes to a new page when it does not fit in kPageRoom: the last
// 8 bytes of a page are left for the daemon's lost count.
TEST(RingWriterTest, EventThatDoesNotFitOpensANewPage) {
  TestRing ring(8192);
  std::memset(ring.data(), 0xaa, 8192);
  RingWriter writer;
  writer.Attach(ring.base());
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(writer.Reserve(1000, 1, 2, i), ring.data() + 16 + i * 1016 + 8 + 8);
    writer.Commit();
  }
  // 1024 bytes exactly fill the page's room.
  ASSERT_EQ(writer.Reserve(1008, 1, 2, 3), ring.data() + 16 + 3 * 1016 + 8 + 8);
  writer.Commit();
  EXPECT_EQ(ring.header()->head.load(), 16u + kPageRoom);
  // The smallest event, 12 bytes, would still fit in kPageDataBytes.
  ASSERT_EQ(writer.Reserve(0, 1, 2, 4), ring.data() + 4096 + 16 + 4 + 8);
  writer.Commit();
  EXPECT_EQ(ring.Get<PageHeader>(0).commit, ClosedCommit(kPageRoom, 2));
  EXPECT_EQ(ring.Get<uint64_t>(4096 - 8), 0xaaaaaaaaaaaaaaaau) << "the lost-count room is the daemon's";
  EXPECT_EQ(ring.Get<PageHeader>(4096).timestamp, 4u);
  EXPECT_EQ(ring.header()->head.load(), 4096u + 16 + 12);
}

// A delta beyond 27 bits goes in a time extend before the event: the low
// 27 bits in its word, the rest in the word after.
TEST(RingWriterTest, LargeDeltasGetATimeExtend) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  uint64_t time = 1000;
  Write(writer, 8, 0, time);
  Write(writer, 8, 0, time += kMaxTimeDelta);
  EXPECT_EQ(ring.Get<uint32_t>(36), EventWord(4, kMaxTimeDelta)) << "the largest delta of a word";
  EXPECT_EQ(ring.header()->head.load(), 56u);

  Write(writer, 8, 0, time += (uint64_t{0x12345} << kTimeDeltaBits) + 77);
  EXPECT_EQ(ring.Get<uint32_t>(56), EventWord(kTypeTimeExtend, 77));
  EXPECT_EQ(ring.Get<uint32_t>(60), 0x12345u);
  EXPECT_EQ(ring.Get<uint32_t>(64), EventWord(4, 0));
  EXPECT_EQ(ring.header()->head.load(), 56u + 8 + 20);

  Write(writer, 8, 0, time + kMaxTimeDelta + 1);
  EXPECT_EQ(ring.Get<uint32_t>(84), EventWord(kTypeTimeExtend, 0));
  EXPECT_EQ(ring.Get<uint32_t>(88), 1u);
  EXPECT_EQ(ring.header()->head.load(), 84u + 8 + 20);
  EXPECT_EQ(ring.Get<PageHeader>(0).timestamp, 1000u) << "all in one page";
}

// The time extend needs room too; without it the event opens a new page,
// whose header holds the whole time.
TEST(RingWriterTest, TimeExtendThatDoesNotFitOpensANewPage) {
  TestRing ring(8192);
  RingWriter writer;
  writer.Attach(ring.base());
  // 12 bytes, then 3 x 1016.
  Write(writer, 0, 0, 0);
  for (int i = 0; i < 3; ++i) Write(writer, 1000, 0, 0);
  ASSERT_EQ(ring.header()->head.load(), 16u + 3060);
  // 1008 bytes would fit in the 1012 left, a time extend and 1008 not.
  ASSERT_EQ(writer.Reserve(992, 1, 0, kMaxTimeDelta + 1), ring.data() + 4096 + 16 + 8 + 8);
  writer.Commit();
  EXPECT_EQ(ring.Get<PageHeader>(0).commit, ClosedCommit(3060, 0));
  EXPECT_EQ(ring.Get<PageHeader>(4096).timestamp, kMaxTimeDelta + 1);
  EXPECT_EQ(ring.Get<uint32_t>(4096 + 16), EventWord(0, 0));
}

// Deltas are never negative: a timestamp below the last one is taken as
// equal to it, in the page and in the next one.
TEST(RingWriterTest, EarlierTimestampIsTakenAsTheLast) {
  TestRing ring(8192);
  RingWriter writer;
  writer.Attach(ring.base());
  Write(writer, 8, 0, 100);
  Write(writer, 8, 0, 50);
  EXPECT_EQ(ring.Get<uint32_t>(36), EventWord(4, 0));
  Write(writer, 8, 1, 60);
  EXPECT_EQ(ring.Get<PageHeader>(4096).timestamp, 100u);
  Write(writer, 8, 1, 101);
  EXPECT_EQ(ring.Get<uint32_t>(4096 + 36), EventWord(4, 1));
}

// Likewise when the event before was dropped: the page it could not open
// is opened later, still no earlier than the last event committed.
TEST(RingWriterTest, EarlierTimestampIsTakenAsTheLastAfterADrop) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  Write(writer, 8, 0, 100);
  EXPECT_EQ(writer.Reserve(8, 1, 1, 50), nullptr) << "page 0 is closed, and the only page";
  ring.header()->tail.store(4096);  // the consumer read page 0
  Write(writer, 8, 1, 50);
  EXPECT_EQ(ring.Get<PageHeader>(4096).timestamp, 100u) << "time went backwards";
}

// Room is looked for a page at a time: with no free page an event is
// dropped and counted, until the consumer's tail has passed a whole page.
TEST(RingWriterTest, FullRingDropsUntilTheTailPassesAPage) {
  TestRing ring(8192);
  RingWriter writer;
  writer.Attach(ring.base());
  for (int i = 0; i < 8; ++i) Write(writer, 1000, 0, i);  // 4 events of 1016 bytes a page
  EXPECT_EQ(ring.header()->head.load(), 4096u + 16 + 4 * 1016);
  EXPECT_EQ(writer.Reserve(1000, 1, 0, 8), nullptr);
  EXPECT_EQ(ring.header()->head.load(), 8192u) << "the full page is closed all the same";
  EXPECT_EQ(writer.Reserve(0, 1, 0, 8), nullptr);
  EXPECT_EQ(ring.header()->lost.load(), 2u);
  EXPECT_TRUE(writer.TakeOverflow()) << "a larger ring would have had room";
  EXPECT_FALSE(writer.TakeOverflow()) << "taken";

  ring.header()->tail.store(4096 - 8);  // the consumer is still in page 0
  EXPECT_EQ(writer.Reserve(0, 1, 0, 8), nullptr);
  EXPECT_EQ(ring.header()->lost.load(), 3u);

  // Past it: page 2 is free, in page 0's memory.
  ring.header()->tail.store(4096);
  ASSERT_EQ(writer.Reserve(0, 1, 0, 8), ring.data() + 16 + 4 + 8);
  writer.Commit();
  EXPECT_EQ(ring.header()->head.load(), 8192u + 16 + 12);
  EXPECT_EQ(ring.Get<PageHeader>(8192).timestamp, 8u);
  for (int i = 0; i < 3; ++i) Write(writer, 1000, 0, 9);
  EXPECT_EQ(writer.Reserve(1000, 1, 0, 9), nullptr) << "page 3 is not free yet";
  EXPECT_EQ(ring.header()->lost.load(), 4u);
}

// With full_wait_ms set, a full ring makes the writer wait that long before
// dropping; after a wait that timed out it drops at once until the tail moves.
TEST(RingWriterTest, FullRingWaitsOnceUntilTheTailMoves) {
  constexpr uint32_t kWaitMs = 200;
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  ring.header()->full_wait_ms.store(kWaitMs);
  // The largest event fills the only page: the next one needs another.
  auto fill = [&] { Write(writer, kMaxPayload, 0, 0); };
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

// A one-page ring: a consumer that read up to a head inside the page still
// holds it, so each change of page drops the event that needs the next
// page, until the consumer has seen the page closed and passed it. One
// drop per page, never a ring stuck for good.
TEST(RingWriterTest, OnePageRingDropsOnceAtEachPageChange) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  for (int i = 0; i < 100; ++i) {
    const uint32_t len = i % 2 == 0 ? 1984 : 2984;  // no two fit in a page
    if (writer.Reserve(len, 1, 0, i) == nullptr) {
      ASSERT_EQ(ring.header()->head.load() % 4096, 0u) << "the page before is closed";
      ring.header()->tail.store(ring.header()->head.load());
      ASSERT_NE(writer.Reserve(len, 1, 0, i), nullptr) << i;
    }
    writer.Commit();
    ring.header()->tail.store(ring.header()->head.load());
  }
  EXPECT_EQ(ring.header()->lost.load(), 99u) << "one per page but the first";
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
  EXPECT_EQ(ring.header()->head.load(), 16u + 4 + 24);
  EXPECT_EQ(ring.Get<CommonHeader>(20).type, 2);
}

// An abandoned event that closed a page leaves the next page open and
// empty: the next event takes it, on whatever cpu.
TEST(RingWriterTest, AbandonAfterClosingAPage) {
  TestRing ring(8192);
  RingWriter writer;
  writer.Attach(ring.base());
  Write(writer, 8, 1, 5);
  uint8_t* abandoned = writer.Reserve(8, 1, 2, 6);
  ASSERT_NE(abandoned, nullptr);
  writer.Abandon();
  EXPECT_EQ(ring.header()->head.load(), 4096u) << "page 0 is closed, page 1 has nothing";
  EXPECT_EQ(ring.header()->lost.load(), 0u);
  ASSERT_EQ(writer.Reserve(8, 3, 3, 7), abandoned);
  writer.Commit();
  EXPECT_EQ(ring.Get<PageHeader>(4096).timestamp, 7u);
  EXPECT_EQ(ring.Get<PageHeader>(4096).commit, ClosedCommit(0, 3));
  EXPECT_EQ(ring.Get<CommonHeader>(4096 + 20).type, 3);
  EXPECT_EQ(ring.header()->head.load(), 4096u + 36);
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

// A writer attached to a used ring opens its first page where the next
// page starts.
TEST(RingWriterTest, ReattachStartsAtTheNextPage) {
  TestRing ring(8192);
  {
    RingWriter writer;
    writer.Attach(ring.base());
    Write(writer, 8, 0, 0);
  }
  RingWriter writer;
  writer.Attach(ring.base());
  ASSERT_EQ(writer.Reserve(8, 1, 0, 0), ring.data() + 4096 + 16 + 4 + 8);
  writer.Commit();
  EXPECT_EQ(ring.header()->head.load(), 4096u + 36);
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
