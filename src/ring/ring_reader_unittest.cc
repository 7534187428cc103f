#include "ring/ring_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "ring/ring_test_util.h"
#include "ring/ring_writer.h"

namespace udiag::ring {
namespace {

struct Record {
  uint16_t type;
  uint16_t cpu;
  uint64_t timestamp;
  std::vector<uint8_t> payload;
};

std::vector<Record> DrainAll(RingReader& reader, size_t max_records = SIZE_MAX) {
  std::vector<Record> out;
  reader.Drain(
      [&](const RecordView& r) {
        out.push_back({r.type, r.cpu, r.timestamp, {r.payload.begin(), r.payload.end()}});
      },
      max_records);
  return out;
}

// Payload of record `i`: `len` bytes derived from i, so that any mix-up shows.
std::vector<uint8_t> PayloadFor(uint64_t i, uint32_t len) {
  std::vector<uint8_t> payload(len);
  for (uint32_t j = 0; j < len; ++j) payload[j] = static_cast<uint8_t>(i * 31 + j * 7);
  return payload;
}

bool Write(RingWriter& writer, uint16_t type, uint64_t timestamp, const std::vector<uint8_t>& payload) {
  uint8_t* p = writer.Reserve(payload.size(), type, 1, timestamp);
  if (p == nullptr) return false;
  if (!payload.empty()) std::memcpy(p, payload.data(), payload.size());
  writer.Commit();
  return true;
}

TEST(RingReaderTest, MapsAndReportsIdentity) {
  TestRing ring(16384, ClockDomain::kMonotonic, 777);
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->tid(), 777u);
  EXPECT_EQ(reader->clock(), ClockDomain::kMonotonic);
  EXPECT_TRUE(reader->empty());
  EXPECT_FALSE(reader->broken());
  EXPECT_FALSE(reader->closed());
  EXPECT_EQ(reader->Drain([](const RecordView&) {}, 100), 0u);
}

// Staged records stay the reader's, even when the reader catches up with
// the head, until Release: a writer finds no room over them.
TEST(RingReaderTest, StagedRecordsKeepTheirSpaceUntilReleased) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  const std::vector<uint8_t> payload = PayloadFor(1, 48);  // 64-byte records
  int written = 0;
  while (Write(writer, 1, written, PayloadFor(written, 48))) ++written;
  ASSERT_EQ(written, 4096 / 64);

  std::vector<PayloadSource> staged;
  std::vector<uint64_t> stamps;
  EXPECT_EQ(reader->Stage(
                [&](const RecordHead& head, const PayloadSource& source) {
                  staged.push_back(source);
                  stamps.push_back(head.timestamp);
                },
                SIZE_MAX),
            static_cast<size_t>(written));
  EXPECT_TRUE(reader->empty());
  EXPECT_FALSE(Write(writer, 1, 0, payload)) << "the staged records' space is not the writer's yet";
  for (int i = 0; i < written; ++i) {
    std::vector<uint8_t> copy(staged[i].size());
    staged[i].CopyTo(copy.data());
    EXPECT_EQ(copy, PayloadFor(i, 48)) << i;
    EXPECT_EQ(stamps[i], static_cast<uint64_t>(i));
  }
  reader->Release();
  EXPECT_TRUE(Write(writer, 1, 0, payload)) << "released";
}

TEST(RingReaderTest, RoundTripOfEverySize) {
  TestRing ring(1 << 20);
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  std::vector<uint32_t> sizes;
  for (uint32_t len = 0; len <= 64; ++len) sizes.push_back(len);
  for (uint32_t len : {100u, 1000u, 4000u, kMaxPayload - 1, kMaxPayload}) sizes.push_back(len);
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_TRUE(Write(writer, static_cast<uint16_t>(i + 1), 1000 + i, PayloadFor(i, sizes[i])));
  }
  EXPECT_FALSE(reader->empty());
  const std::vector<Record> records = DrainAll(*reader);
  ASSERT_EQ(records.size(), sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(records[i].type, i + 1);
    EXPECT_EQ(records[i].cpu, 1);
    EXPECT_EQ(records[i].timestamp, 1000 + i);
    EXPECT_EQ(records[i].payload, PayloadFor(i, sizes[i])) << "record " << i;
  }
  EXPECT_TRUE(reader->empty());
  EXPECT_FALSE(reader->broken());
  EXPECT_EQ(ring.header()->tail.load(), ring.header()->head.load());
}

TEST(RingReaderTest, WrapsAroundManyTimes) {
  // Sizes that do not divide the ring, so that the padding lands everywhere,
  // including the last 8 bytes.
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.GuardedReader();
  ASSERT_NE(reader, nullptr);
  uint64_t written = 0, read = 0;
  for (int round = 0; round < 2000; ++round) {
    const int batch = 1 + round % 5;
    for (int k = 0; k < batch; ++k) {
      const uint32_t len = (written * 13) % 700;
      ASSERT_TRUE(Write(writer, 1, written, PayloadFor(written, len))) << written;
      ++written;
    }
    for (const Record& r : DrainAll(*reader)) {
      ASSERT_EQ(r.timestamp, read);
      ASSERT_EQ(r.payload, PayloadFor(read, (read * 13) % 700));
      ++read;
    }
  }
  EXPECT_EQ(read, written);
  EXPECT_GT(ring.header()->head.load(), 50u * 4096) << "wrapped many times";
  EXPECT_FALSE(reader->broken());
  EXPECT_EQ(reader->TakeLost(), 0u);
}

TEST(RingReaderTest, FullRingCountsLost) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  int ok = 0, failed = 0;
  for (int i = 0; i < 200; ++i) {
    (Write(writer, 1, i, PayloadFor(i, 40)) ? ok : failed)++;
  }
  EXPECT_EQ(ok, 4096 / 56);
  EXPECT_EQ(failed, 200 - ok);
  EXPECT_EQ(reader->TakeLost(), static_cast<uint64_t>(failed));
  EXPECT_EQ(reader->TakeLost(), 0u);
  const std::vector<Record> records = DrainAll(*reader);
  ASSERT_EQ(records.size(), static_cast<size_t>(ok));
  for (int i = 0; i < ok; ++i) EXPECT_EQ(records[i].timestamp, static_cast<uint64_t>(i));
  // Room again after the drain.
  EXPECT_TRUE(Write(writer, 1, 1000, PayloadFor(1000, 40)));
  EXPECT_EQ(reader->TakeLost(), 0u);
  EXPECT_FALSE(Write(writer, 1, 1001, PayloadFor(1001, kMaxPayload + 1)));
  EXPECT_EQ(reader->TakeLost(), 1u);
}

TEST(RingReaderTest, TakeLostIgnoresACounterGoingBackwards) {
  TestRing ring(4096);
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  ring.header()->lost.store(10);
  EXPECT_EQ(reader->TakeLost(), 10u);
  ring.header()->lost.store(4);
  EXPECT_EQ(reader->TakeLost(), 0u);
  ring.header()->lost.store(12);
  EXPECT_EQ(reader->TakeLost(), 2u);
}

TEST(RingReaderTest, AbandonedRecordIsNeverDelivered) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  ASSERT_NE(writer.Reserve(100, 5, 0, 0), nullptr);
  writer.Abandon();
  EXPECT_TRUE(reader->empty());
  EXPECT_TRUE(DrainAll(*reader).empty());
  ASSERT_TRUE(Write(writer, 6, 1, PayloadFor(1, 10)));
  const std::vector<Record> records = DrainAll(*reader);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].type, 6);
  EXPECT_EQ(reader->TakeLost(), 0u);
}

TEST(RingReaderTest, AbandonAfterWrapDeliversNothing) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  ASSERT_TRUE(Write(writer, 1, 0, PayloadFor(0, 3000)));
  ASSERT_EQ(DrainAll(*reader).size(), 1u);
  ASSERT_NE(writer.Reserve(2000, 2, 0, 0), nullptr);  // wraps
  writer.Abandon();
  EXPECT_TRUE(DrainAll(*reader).empty());
  EXPECT_FALSE(reader->broken());
  ASSERT_TRUE(Write(writer, 3, 0, PayloadFor(3, 2000)));
  const std::vector<Record> records = DrainAll(*reader);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].type, 3);
}

TEST(RingReaderTest, DrainHonorsMaxRecordsAndPublishesTail) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Write(writer, 1, i, PayloadFor(i, 8)));
  std::vector<Record> first = DrainAll(*reader, 3);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[2].timestamp, 2u);
  EXPECT_EQ(ring.header()->tail.load(), 3u * 24);
  EXPECT_FALSE(reader->empty());
  std::vector<Record> rest = DrainAll(*reader);
  ASSERT_EQ(rest.size(), 7u);
  EXPECT_EQ(rest[0].timestamp, 3u);
  EXPECT_EQ(ring.header()->tail.load(), 10u * 24);
  EXPECT_TRUE(reader->empty());
}

TEST(RingReaderTest, SleepAndWakeHandshake) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  reader->SetConsumerSleeping(true);
  EXPECT_TRUE(reader->empty());
  ASSERT_NE(writer.Reserve(0, 1, 0, 0), nullptr);
  EXPECT_TRUE(writer.Commit()) << "first commit after sleep wakes";
  ASSERT_NE(writer.Reserve(0, 1, 0, 0), nullptr);
  EXPECT_FALSE(writer.Commit()) << "only once";
  EXPECT_FALSE(reader->empty());
  reader->SetConsumerSleeping(true);
  reader->SetConsumerSleeping(false);
  ASSERT_NE(writer.Reserve(0, 1, 0, 0), nullptr);
  EXPECT_FALSE(writer.Commit());
  EXPECT_EQ(DrainAll(*reader).size(), 3u);
}

TEST(RingReaderTest, DrainHeadsHandsEachPayloadOutBeforeReleasingIt) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.GuardedReader();
  ASSERT_NE(reader, nullptr);
  uint64_t written = 0, read = 0;
  for (int round = 0; round < 500; ++round) {
    for (int k = 0; k < 1 + round % 4; ++k) {
      ASSERT_TRUE(Write(writer, static_cast<uint16_t>(1 + written % 2), written, PayloadFor(written, (written * 13) % 700)));
      ++written;
    }
    reader->DrainHeads(
        [&](const RecordHead& head, const PayloadSource& payload) {
          // Not yet released: the producer cannot be overwriting it.
          EXPECT_LT(ring.header()->tail.load(), ring.header()->head.load());
          ASSERT_EQ(head.timestamp, read);
          ASSERT_EQ(head.payload_size, (read * 13) % 700);
          ASSERT_EQ(payload.size(), head.payload_size);
          ++read;
          if (head.type == 2) return;  // skipped records are consumed too
          std::vector<uint8_t> copy(payload.size());
          payload.CopyTo(copy.data());
          ASSERT_EQ(copy, PayloadFor(head.timestamp, head.payload_size));
        },
        SIZE_MAX);
    ASSERT_EQ(ring.header()->tail.load(), ring.header()->head.load());
  }
  EXPECT_EQ(read, written);
  EXPECT_FALSE(reader->broken());
}

TEST(RingReaderTest, ClosedRingIsDrainedFirst) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  ASSERT_TRUE(Write(writer, 1, 0, PayloadFor(0, 8)));
  writer.MarkClosed();
  EXPECT_TRUE(reader->closed());
  EXPECT_FALSE(reader->empty());
  EXPECT_EQ(DrainAll(*reader).size(), 1u);
  EXPECT_TRUE(reader->empty());
}

TEST(RingReaderTest, ReaderAndWriterInOneMapping) {
  TestRing ring(4096);
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  RingWriter writer;
  writer.Attach(RingReaderTestPeer::Base(*reader));
  ASSERT_TRUE(Write(writer, 9, 5, PayloadFor(5, 33)));
  EXPECT_EQ(ring.header()->head.load(), 56u) << "same memory as the creator's mapping";
  const std::vector<Record> records = DrainAll(*reader);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].payload, PayloadFor(5, 33));
}

}  // namespace
}  // namespace udiag::ring
