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

// What a reader hands out for `payload`: the common header and the payload
// are padded with zeros to whole words.
std::vector<uint8_t> Padded(std::vector<uint8_t> payload) {
  payload.resize(PaddedPayload(payload.size()));
  return payload;
}

bool Write(RingWriter& writer, uint16_t type, uint64_t timestamp, const std::vector<uint8_t>& payload,
           uint16_t cpu = 1) {
  uint8_t* p = writer.Reserve(payload.size(), type, cpu, timestamp);
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
  const std::vector<uint8_t> payload = PayloadFor(1, 48);  // 60-byte events
  int written = 0;
  while (Write(writer, 1, written, PayloadFor(written, 48))) ++written;
  ASSERT_EQ(written, kPageRoom / 60) << "the only page is full";

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
    EXPECT_EQ(records[i].payload, Padded(PayloadFor(i, sizes[i]))) << "record " << i;
  }
  EXPECT_TRUE(reader->empty());
  EXPECT_FALSE(reader->broken());
  EXPECT_EQ(ring.header()->tail.load(), ring.header()->head.load());
}

TEST(RingReaderTest, WrapsAroundManyTimes) {
  // Sizes that do not divide a page, so that pages end after any number of
  // events and bytes. Two pages: the writer can open a page while the reader
  // is still in the one before.
  TestRing ring(8192);
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
      ASSERT_EQ(r.payload, Padded(PayloadFor(read, (read * 13) % 700)));
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
  EXPECT_EQ(ok, static_cast<int>(kPageRoom / 52)) << "52-byte events fill the only page";
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

// A ring the daemon maps late (it was stopped, or the producer counted
// losses while it had no daemon) comes with losses already counted: they
// are taken in full when they fit the time since the producer could write.
TEST(RingReaderTest, LossesCountedBeforeTheMapAreTakenWhenTheyFitTheTime) {
  constexpr uint64_t kLost = 1'000'000'000;  // a second's worth: more than a test is ever descheduled
  TestRing ring(4096);
  ring.header()->lost.store(kLost);
  auto reader = ring.Reader(base::MonotonicNs() - 2 * kLost);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->TakeLost(), kLost);
  auto late = ring.Reader(base::MonotonicNs());
  ASSERT_NE(late, nullptr);
  EXPECT_LT(late->TakeLost(), kLost) << "more than could have been lost since the start";
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
  TestRing ring(8192);
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  for (int i = 0; i < 2; ++i) {  // a page each
    ASSERT_TRUE(Write(writer, 1, 0, PayloadFor(0, 3000)));
    ASSERT_EQ(DrainAll(*reader).size(), 1u);
  }
  ASSERT_NE(writer.Reserve(2000, 2, 0, 0), nullptr);  // closes page 1, opens page 2 in page 0's memory
  writer.Abandon();
  EXPECT_TRUE(DrainAll(*reader).empty());
  EXPECT_FALSE(reader->broken());
  ASSERT_TRUE(Write(writer, 3, 0, PayloadFor(3, 2000)));
  EXPECT_EQ(ring.header()->head.load(), 8192u + 16 + 8 + 2008);
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
  EXPECT_EQ(ring.header()->tail.load(), 16u + 3 * 20);
  EXPECT_FALSE(reader->empty());
  std::vector<Record> rest = DrainAll(*reader);
  ASSERT_EQ(rest.size(), 7u);
  EXPECT_EQ(rest[0].timestamp, 3u);
  EXPECT_EQ(ring.header()->tail.load(), 16u + 10 * 20);
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

// A dozing consumer is poked by the first commit of a page that opens with
// an eighth of the ring unread, once, and again only after it has read.
TEST(RingReaderTest, ADozingConsumerIsPokedOnceAnEighthIsUnread) {
  TestRing ring(64 << 10);  // an eighth: two pages
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  ASSERT_TRUE(reader->SetConsumerDozing(true));
  EXPECT_EQ(ring.header()->consumer_sleeping.load(), kConsumerDozes);
  const std::vector<uint8_t> payload(100);
  // Writes until head reaches `until`; the heads after the commits that poked.
  auto heads_at_pokes = [&](uint64_t until) {
    std::vector<uint64_t> heads;
    while (ring.header()->head.load() < until) {
      uint8_t* at = writer.Reserve(payload.size(), 1, 0, 0);
      EXPECT_NE(at, nullptr);
      if (at == nullptr) break;
      if (writer.Commit()) heads.push_back(ring.header()->head.load());
    }
    return heads;
  };
  std::vector<uint64_t> pokes = heads_at_pokes(4 * 4096);
  ASSERT_EQ(pokes.size(), 1u);
  EXPECT_GT(pokes[0], 2 * 4096u) << "not before the third page";
  EXPECT_LT(pokes[0], 2 * 4096u + 200) << "its first event";

  DrainAll(*reader);  // the tail is now in page 4
  ASSERT_TRUE(reader->SetConsumerDozing(true));
  pokes = heads_at_pokes(9 * 4096);
  ASSERT_EQ(pokes.size(), 1u);
  EXPECT_GT(pokes[0], 7 * 4096u) << "two pages' worth past the tail";
  EXPECT_LT(pokes[0], 7 * 4096u + 200);

  reader->SetConsumerDozing(false);
  EXPECT_EQ(ring.header()->consumer_sleeping.load(), kConsumerAwake);
}

// Each commit says whether it took the flag and must poke.
TEST(RingReaderTest, TheCommitThatTakesTheDozersFlagPokes) {
  TestRing ring(16 << 10);  // an eighth is less than a page: every page open
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  ASSERT_TRUE(reader->SetConsumerDozing(true));
  const std::vector<uint8_t> big(4000);  // a page each
  ASSERT_TRUE(Write(writer, 1, 0, big, 0));
  ASSERT_NE(writer.Reserve(big.size(), 1, 0, 0), nullptr);
  EXPECT_TRUE(writer.Commit()) << "the second page opened with the first unread";
  ASSERT_NE(writer.Reserve(8, 1, 0, 0), nullptr);
  EXPECT_FALSE(writer.Commit()) << "once";
}

// A producer that does not say it pokes a dozing consumer, or a ring of one
// page (which cannot open a page with anything unread), keeps its consumer
// polling.
TEST(RingReaderTest, OnlyARingThatPokesADozerLetsItsConsumerDoze) {
  TestRing older(64 << 10);
  older.header()->features = 0;
  auto reader = older.Reader();
  ASSERT_NE(reader, nullptr);
  EXPECT_FALSE(reader->SetConsumerDozing(true));
  EXPECT_EQ(older.header()->consumer_sleeping.load(), kConsumerAwake);
  EXPECT_TRUE(reader->SetConsumerDozing(false));

  TestRing one_page(4096);
  auto small = one_page.Reader();
  ASSERT_NE(small, nullptr);
  EXPECT_FALSE(small->SetConsumerDozing(true));
}

TEST(RingReaderTest, DrainHeadsHandsEachPayloadOutBeforeReleasingIt) {
  TestRing ring(8192);
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
          const std::vector<uint8_t> expected = Padded(PayloadFor(read, (read * 13) % 700));
          ASSERT_EQ(head.payload_size, expected.size());
          ASSERT_EQ(payload.size(), head.payload_size);
          ++read;
          if (head.type == 2) return;  // skipped records are consumed too
          std::vector<uint8_t> copy(payload.size());
          payload.CopyTo(copy.data());
          ASSERT_EQ(copy, expected);
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
  EXPECT_EQ(ring.header()->head.load(), 16u + 4 + 44) << "same memory as the creator's mapping";
  const std::vector<Record> records = DrainAll(*reader);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].payload, Padded(PayloadFor(5, 33)));
}

// What StagePages handed out, in order: pages whole, events one by one.
struct Staged {
  bool page;
  uint16_t cpu;
  uint64_t timestamp;
  std::vector<uint8_t> bytes;  // the page, or the event's payload
  uint64_t next_timestamp = 0;  // a page's PageHead::next_timestamp
};

size_t StageAll(RingReader& reader, bool hold_open_page, std::vector<Staged>* out,
                size_t max_records = SIZE_MAX, uint64_t held_if_since = 0,
                size_t page_weight = RingReader::kPageWeight, uint64_t before = UINT64_MAX) {
  return reader.StagePages(
      [&](const RecordHead& head, const PayloadSource& payload) {
        std::vector<uint8_t> bytes(payload.size());
        payload.CopyTo(bytes.data());
        out->push_back({false, head.cpu, head.timestamp, std::move(bytes)});
      },
      [&](const PageHead& head, const PayloadSource& page) {
        std::vector<uint8_t> bytes(kRingPageSize);
        page.CopyPageTo(bytes.data());
        out->push_back({true, head.cpu, head.timestamp, std::move(bytes), head.next_timestamp});
      },
      max_records, hold_open_page, held_if_since, page_weight, before);
}

// A page of the ring's memory, as StagePages should hand it out.
std::vector<uint8_t> PageAt(const TestRing& ring, uint64_t page) {
  const uint8_t* at = ring.data() + (page & (ring.data_size() - 1));
  return {at, at + kRingPageSize};
}

// A small ring with its writer attached and its reader, for StagePages.
class StagePagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    writer_.Attach(ring_.base());
    reader_ = ring_.Reader();
    ASSERT_NE(reader_, nullptr);
  }
  TestRing ring_{32768};
  RingWriter writer_;
  std::unique_ptr<RingReader> reader_;
};

// An open page begun before `held_if_since` is a slow writer's: it is read
// event by event even when open pages are held; a later one is held.
TEST_F(StagePagesTest, HoldsOnlyARecentOpenPage) {
  ASSERT_TRUE(Write(writer_, 1, 100, PayloadFor(10, 5), /*cpu=*/1));
  std::vector<Staged> staged;
  EXPECT_EQ(StageAll(*reader_, /*hold_open_page=*/true, &staged, SIZE_MAX, /*held_if_since=*/100), 0u);
  EXPECT_TRUE(reader_->holding_open_page()) << "begun at 100: recent enough";
  EXPECT_EQ(StageAll(*reader_, true, &staged, SIZE_MAX, /*held_if_since=*/101), 1u);
  EXPECT_FALSE(reader_->holding_open_page());
  ASSERT_EQ(staged.size(), 1u);
  EXPECT_FALSE(staged[0].page);
  EXPECT_EQ(staged[0].timestamp, 100u);
}

// StagePages hands out a page the producer closed whole, with its header's
// cpu and time and the next page's time. The page it still fills is held
// with hold_open_page, else read event by event. Nothing is the producer's
// again until Release.
TEST(RingReaderTest, StagePagesHandsClosedPagesWhole) {
  TestRing ring(16384);
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.GuardedReader();
  ASSERT_NE(reader, nullptr);
  ASSERT_TRUE(Write(writer, 1, 10, PayloadFor(10, 5), /*cpu=*/1));
  ASSERT_TRUE(Write(writer, 1, 11, PayloadFor(11, 5), 1));
  ASSERT_TRUE(Write(writer, 1, 20, PayloadFor(20, 5), 2));  // closes page 0
  ASSERT_TRUE(Write(writer, 1, 30, PayloadFor(30, 5), 3));  // closes page 1

  std::vector<Staged> staged;
  EXPECT_EQ(StageAll(*reader, /*hold_open_page=*/true, &staged, 1), RingReader::kPageWeight)
      << "a page weighs";
  EXPECT_EQ(StageAll(*reader, true, &staged), RingReader::kPageWeight);
  EXPECT_TRUE(reader->holding_open_page());
  ASSERT_EQ(staged.size(), 2u);
  EXPECT_TRUE(staged[0].page);
  EXPECT_EQ(staged[0].cpu, 1);
  EXPECT_EQ(staged[0].timestamp, 10u);
  EXPECT_EQ(staged[0].bytes, PageAt(ring, 0));
  EXPECT_EQ(staged[0].next_timestamp, 20u);
  EXPECT_TRUE(staged[1].page);
  EXPECT_EQ(staged[1].cpu, 2);
  EXPECT_EQ(staged[1].timestamp, 20u);
  EXPECT_EQ(staged[1].bytes, PageAt(ring, 4096));
  EXPECT_EQ(staged[1].next_timestamp, 30u);
  EXPECT_EQ(reader->position(), 8192u);
  EXPECT_EQ(StageAll(*reader, true, &staged), 0u);
  EXPECT_TRUE(reader->holding_open_page());
  EXPECT_EQ(staged.size(), 2u);

  staged.clear();
  EXPECT_EQ(StageAll(*reader, /*hold_open_page=*/false, &staged), 1u);
  EXPECT_FALSE(reader->holding_open_page());
  ASSERT_EQ(staged.size(), 1u);
  EXPECT_FALSE(staged[0].page);
  EXPECT_EQ(staged[0].cpu, 3);
  EXPECT_EQ(staged[0].timestamp, 30u);
  EXPECT_EQ(staged[0].bytes, Padded(PayloadFor(30, 5)));

  // Staged, not released: the writer gets page 3, but not page 4 (page 0's memory).
  EXPECT_EQ(ring.header()->tail.load(), 0u);
  ASSERT_TRUE(Write(writer, 1, 40, PayloadFor(40, 5), 4));
  EXPECT_FALSE(Write(writer, 1, 50, PayloadFor(50, 5), 5));
  reader->Release();
  EXPECT_EQ(ring.header()->tail.load(), 8192u + 16 + 4 + 16);
  EXPECT_TRUE(Write(writer, 1, 50, PayloadFor(50, 5), 5));
  EXPECT_FALSE(reader->broken());
}

// A page held while its producer filled it goes whole once it is closed.
TEST_F(StagePagesTest, TakesAHeldPageWholeOnceClosed) {
  ASSERT_TRUE(Write(writer_, 1, 10, PayloadFor(10, 8), /*cpu=*/1));
  std::vector<Staged> staged;
  EXPECT_EQ(StageAll(*reader_, /*hold_open_page=*/true, &staged), 0u);
  EXPECT_TRUE(reader_->holding_open_page());
  ASSERT_TRUE(Write(writer_, 1, 20, PayloadFor(20, 8), 2));  // closes page 0

  EXPECT_EQ(StageAll(*reader_, true, &staged), RingReader::kPageWeight);
  ASSERT_EQ(staged.size(), 1u) << "the page was closed under the held reader";
  EXPECT_TRUE(staged[0].page);
  EXPECT_EQ(staged[0].cpu, 1);
  EXPECT_TRUE(reader_->holding_open_page()) << "page 1";
}

// A caller that counts pages by what they cost it (a --block recording's
// room) gives them their weight: max_records then bounds pages exactly.
TEST(RingReaderTest, StagePagesCountsAPageItsGivenWeight) {
  TestRing ring(16384);
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  // A change of cpu closes the page: three closed pages, a fourth open.
  for (uint16_t i = 0; i < 4; ++i) ASSERT_TRUE(Write(writer, 1, 10 * (i + 1), PayloadFor(i, 8), /*cpu=*/1 + i % 2));
  std::vector<Staged> staged;
  EXPECT_EQ(StageAll(*reader, /*hold_open_page=*/true, &staged, /*max_records=*/2, 0, /*page_weight=*/1), 2u);
  ASSERT_EQ(staged.size(), 2u) << "two pages of weight 1 in a budget of 2";
  EXPECT_TRUE(staged[0].page && staged[1].page);
  staged.clear();
  EXPECT_EQ(StageAll(*reader, true, &staged, /*max_records=*/2), RingReader::kPageWeight)
      << "at the usual weight, one page passes a budget of 2";
  EXPECT_EQ(staged.size(), 1u);
}

// A page read event by event does not make the closed page after it be
// read so too: reading is at that page's start.
TEST(RingReaderTest, StagePagesTakesTheClosedPageAfterAnEventReadOneWhole) {
  TestRing ring(16384);
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  ASSERT_TRUE(Write(writer, 1, 10, PayloadFor(10, 8), /*cpu=*/1));
  std::vector<Staged> staged;
  EXPECT_EQ(StageAll(*reader, /*hold_open_page=*/false, &staged), 1u);
  ASSERT_TRUE(Write(writer, 1, 20, PayloadFor(20, 8), 2));  // closes page 0
  ASSERT_TRUE(Write(writer, 1, 30, PayloadFor(30, 8), 3));  // closes page 1

  staged.clear();
  EXPECT_EQ(StageAll(*reader, /*hold_open_page=*/true, &staged), RingReader::kPageWeight);
  ASSERT_EQ(staged.size(), 1u);
  EXPECT_TRUE(staged[0].page) << "page 1 was read event by event";
  EXPECT_EQ(staged[0].cpu, 2);
  EXPECT_TRUE(reader->holding_open_page()) << "page 2";
}

// Staging stops before the first record stamped after `before`; the next
// call goes on from there.
TEST_F(StagePagesTest, StageStopsAfterBefore) {
  for (uint64_t t : {10, 20, 30}) ASSERT_TRUE(Write(writer_, 1, t, PayloadFor(t, 8)));
  std::vector<uint64_t> stamps;
  auto take = [&](const RecordHead& head, const PayloadSource&) { stamps.push_back(head.timestamp); };
  EXPECT_EQ(reader_->Stage(take, SIZE_MAX, /*before=*/20), 2u);
  EXPECT_EQ(reader_->Stage(take, SIZE_MAX, /*before=*/29), 0u);
  EXPECT_EQ(reader_->Stage(take, SIZE_MAX), 1u);
  EXPECT_EQ(stamps, (std::vector<uint64_t>{10, 20, 30}));
  EXPECT_TRUE(reader_->empty());
}

// Up to `before`, a closed page goes whole only when the page after it
// starts by then (so all of its events are that early); one that reaches
// past it is read event by event up to it, and a page that starts after
// it waits.
TEST_F(StagePagesTest, ReadsUpToBefore) {
  RingWriter& writer = writer_;
  RingReader* reader = reader_.get();
  // A change of cpu closes a page: pages at 10 (two events), 20 (two), 30, and 40 open.
  ASSERT_TRUE(Write(writer, 1, 10, PayloadFor(10, 8), /*cpu=*/1));
  ASSERT_TRUE(Write(writer, 1, 11, PayloadFor(11, 8), 1));
  ASSERT_TRUE(Write(writer, 1, 20, PayloadFor(20, 8), 2));
  ASSERT_TRUE(Write(writer, 1, 26, PayloadFor(26, 8), 2));
  ASSERT_TRUE(Write(writer, 1, 30, PayloadFor(30, 8), 1));
  ASSERT_TRUE(Write(writer, 1, 40, PayloadFor(40, 8), 2));

  std::vector<Staged> staged;
  auto stage_up_to = [&](uint64_t before) {
    staged.clear();
    return StageAll(*reader, /*hold_open_page=*/false, &staged, SIZE_MAX, 0, RingReader::kPageWeight, before);
  };
  EXPECT_EQ(stage_up_to(25), RingReader::kPageWeight + 1);
  ASSERT_EQ(staged.size(), 2u);
  EXPECT_TRUE(staged[0].page) << "the page at 10 ends by 20";
  EXPECT_FALSE(staged[1].page) << "the page at 20 reaches 26";
  EXPECT_EQ(staged[1].timestamp, 20u);

  EXPECT_EQ(stage_up_to(29), 1u);
  ASSERT_EQ(staged.size(), 1u);
  EXPECT_EQ(staged[0].timestamp, 26u);
  EXPECT_EQ(stage_up_to(39), 1u);
  ASSERT_EQ(staged.size(), 1u);
  EXPECT_FALSE(staged[0].page) << "the page at 30 may reach past 39: the next one starts at 40";
  EXPECT_EQ(staged[0].timestamp, 30u);
  EXPECT_EQ(stage_up_to(39), 0u);
  EXPECT_EQ(stage_up_to(40), 1u);
  ASSERT_EQ(staged.size(), 1u);
  EXPECT_EQ(staged[0].timestamp, 40u);
  EXPECT_TRUE(reader->empty());
  EXPECT_FALSE(reader->broken());
}

// How far a number of pages on reaches: the time of the page there, or of
// an open page StagePages would hold, or no limit.
TEST_F(StagePagesTest, TimeAfterPagesIsWhereReadingThatFarStops) {
  RingWriter& writer = writer_;
  RingReader* reader = reader_.get();
  EXPECT_EQ(reader->TimeAfterPages(1, true, 0), UINT64_MAX) << "empty";
  for (uint16_t i = 0; i < 4; ++i)
    ASSERT_TRUE(Write(writer, 1, 10 * (i + 1), PayloadFor(i, 8), /*cpu=*/1 + i % 2));
  EXPECT_EQ(reader->TimeAfterPages(0, false, 0), 10u);
  EXPECT_EQ(reader->TimeAfterPages(1, false, 0), 20u);
  EXPECT_EQ(reader->TimeAfterPages(3, false, 0), 40u) << "the open page";
  EXPECT_EQ(reader->TimeAfterPages(4, false, 0), UINT64_MAX) << "everything is within four pages";
  EXPECT_EQ(reader->TimeAfterPages(4, true, 40), 40u) << "the open page, held";
  EXPECT_EQ(reader->TimeAfterPages(4, true, 41), UINT64_MAX) << "too old to be held";
  EXPECT_EQ(reader->TimeAfterPages(SIZE_MAX, false, 0), UINT64_MAX);
}

}  // namespace
}  // namespace udiag::ring
