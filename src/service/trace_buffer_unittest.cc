#include "service/trace_buffer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

namespace udiag::service {
namespace {

std::vector<uint8_t> Record(size_t n, uint8_t fill) { return std::vector<uint8_t>(n, fill); }

TEST(TraceBufferTest, KeepsOrderAndPops) {
  TraceBuffer buf(1 << 20);
  for (uint8_t i = 0; i < 10; ++i) ASSERT_TRUE(buf.Append({i, 1, 2, 0}, Record(12, i)));
  std::vector<uint64_t> seen;
  buf.ForEach([&](const TraceEntry& e) { seen.push_back(e.meta.timestamp); });
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_EQ(seen[9], 9u);
  TraceEntry e;
  std::vector<uint8_t> storage;
  ASSERT_TRUE(buf.Pop(&e, &storage));
  EXPECT_EQ(e.meta.timestamp, 0u);
  EXPECT_EQ(e.record.size(), 12u);
  EXPECT_EQ(buf.entries(), 9u);
}

TEST(TraceBufferTest, DiscardNewCountsLostAndReportsItWithTheNextEntry) {
  TraceBuffer buf(64 * 1024);
  size_t accepted = 0;
  while (buf.Append({}, Record(1000, 1))) ++accepted;
  EXPECT_EQ(buf.lost_total(), 1u);
  EXPECT_TRUE(!buf.Append({}, Record(1000, 1)));
  EXPECT_EQ(buf.pending_lost(), 2u);
  EXPECT_EQ(buf.written(), accepted + 2);
  // Free room by consuming, then the next entry carries the loss.
  TraceEntry e;
  std::vector<uint8_t> storage;
  while (buf.Pop(&e, &storage)) {
  }
  ASSERT_TRUE(buf.Append({}, Record(8, 2)));
  buf.ForEach([&](const TraceEntry& entry) { EXPECT_EQ(entry.lost_before, 2u); });
  EXPECT_EQ(buf.pending_lost(), 0u);
}

// Each loss lands in exactly one of the stats' counters, which add up to
// lost_total().
TEST(TraceBufferTest, StatsTellWhereEachLossHappened) {
  TraceBuffer buf(64 * 1024);
  buf.NoteLost(3);
  uint64_t accepted = 0;
  while (buf.Append({10 + accepted}, Record(1000, 1))) ++accepted;
  ASSERT_FALSE(buf.Append({}, Record(70 * 1024, 1)));  // larger than any chunk
  EXPECT_EQ(buf.stats().lost_upstream, 3u);
  EXPECT_EQ(buf.stats().dropped, 2u);
  EXPECT_EQ(buf.stats().overrun, 0u);
  EXPECT_EQ(buf.oldest_timestamp(), 10u);
  EXPECT_EQ(buf.bytes(), accepted * 1040);  // 1000 bytes + a 40-byte header, 8-aligned

  TraceEntry e;
  std::vector<uint8_t> storage;
  ASSERT_TRUE(buf.Pop(&e, &storage));
  buf.Consume(buf.RunAt(0).first(1040).size(), 1);
  EXPECT_EQ(buf.stats().read, 2u);
  EXPECT_EQ(buf.oldest_timestamp(), 12u);

  buf.set_overwrite(true);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(buf.Append({}, Record(1000, 2)));
  EXPECT_GT(buf.stats().overrun, 0u);
  const TraceBuffer::Stats& s = buf.stats();
  EXPECT_EQ(s.lost_upstream + s.dropped + s.overrun, buf.lost_total());

  buf.Clear();
  EXPECT_EQ(buf.stats().overrun + buf.stats().dropped + buf.stats().read + buf.stats().lost_upstream, 0u);
  EXPECT_EQ(buf.oldest_timestamp(), 0u);
}

// RoomFor is exact for records of the size asked about and safe for smaller
// ones: that many are taken, the next is refused.
TEST(TraceBufferTest, RoomForIsWhatAppendTakesBeforeRefusing) {
  for (size_t record : {size_t{8}, size_t{40}, size_t{1000}, size_t{4072}}) {
    TraceBuffer buf(256 * 1024);
    ASSERT_TRUE(buf.Append({}, Record(24, 1)));  // a partly used last chunk
    const size_t room = buf.RoomFor(record);
    EXPECT_GT(room, 0u);
    for (size_t i = 0; i < room; ++i) ASSERT_TRUE(buf.Append({}, Record(record, 2))) << record << " #" << i;
    EXPECT_EQ(buf.RoomFor(record), 0u);
    EXPECT_FALSE(buf.Append({}, Record(record, 3))) << record;
    EXPECT_EQ(buf.stats().dropped, 1u);
  }
  TraceBuffer mixed(128 * 1024);
  const size_t room = mixed.RoomFor(1000);
  for (size_t i = 0; i < room; ++i) ASSERT_TRUE(mixed.Append({}, Record(i % 3 == 0 ? 1000 : 16, 4)));
  // Consuming everything gives the whole capacity back.
  TraceEntry e;
  std::vector<uint8_t> storage;
  while (mixed.Pop(&e, &storage)) {
  }
  EXPECT_EQ(mixed.RoomFor(1000), TraceBuffer(128 * 1024).RoomFor(1000));
}

TEST(TraceBufferTest, OverwriteDropsOldest) {
  TraceBuffer buf(128 * 1024);
  buf.set_overwrite(true);
  for (uint64_t i = 0; i < 1000; ++i) ASSERT_TRUE(buf.Append({i}, Record(1000, 3)));
  uint64_t first = UINT64_MAX;
  buf.ForEach([&](const TraceEntry& e) { first = std::min(first, e.meta.timestamp); });
  EXPECT_GT(first, 0u);
  EXPECT_EQ(buf.written(), 1000u);
}

TEST(TraceBufferTest, OverwrittenEventsAreReportedBeforeTheOldestKept) {
  TraceBuffer buf(128 * 1024);
  buf.set_overwrite(true);
  buf.NoteLost(5);  // lost on the way in, before the first entry
  const uint64_t n = 1000;
  for (uint64_t i = 0; i < n; ++i) ASSERT_TRUE(buf.Append({i}, Record(1000, 3)));
  // Every event is either kept or counted lost, and the count sits on the
  // oldest entry kept, however many chunks were dropped before it.
  uint64_t kept = 0, reported = 0, first = UINT64_MAX;
  buf.ForEach([&](const TraceEntry& e) {
    if (kept++ == 0) first = e.meta.timestamp;
    reported += e.lost_before;
  });
  EXPECT_EQ(kept + reported, n + 5);
  EXPECT_EQ(reported, first + 5);
  EXPECT_EQ(buf.pending_lost(), 0u);
}

TEST(TraceBufferTest, ClearForgetsEverything) {
  TraceBuffer buf(1 << 20);
  buf.Append({}, Record(8, 0));
  buf.NoteLost(3);
  buf.Clear();
  EXPECT_EQ(buf.entries(), 0u);
  EXPECT_EQ(buf.written(), 0u);
}

}  // namespace
}  // namespace udiag::service

namespace udiag::service {
namespace {

TEST(TraceBufferTest, RunsAreTheStoredEntriesAndConsumeRemovesThem) {
  TraceBuffer buf(1 << 20);
  for (uint8_t i = 0; i < 3; ++i) ASSERT_TRUE(buf.Append({i, 7, 8, 1}, Record(12, i)));
  std::span<const uint8_t> run = buf.RunAt(0);
  ASSERT_EQ(run.size(), 3 * 56u);  // 40-byte RecordEntry + 12 bytes, padded to 8
  ipc::RecordEntry first;
  std::memcpy(&first, run.data(), sizeof(first));
  EXPECT_EQ(first.size, 56u);
  EXPECT_EQ(first.record_size, 12u);
  EXPECT_EQ(first.pid, 7u);
  EXPECT_EQ(first.tid, 8u);
  EXPECT_EQ(run[sizeof(first)], 0);  // the record bytes follow
  buf.Consume(56, 1);
  EXPECT_EQ(buf.entries(), 2u);
  TraceEntry e;
  std::vector<uint8_t> storage;
  ASSERT_TRUE(buf.Pop(&e, &storage));
  EXPECT_EQ(e.meta.timestamp, 1u);
  buf.Consume(buf.RunAt(0).size(), 1);
  EXPECT_EQ(buf.entries(), 0u);
  EXPECT_TRUE(buf.RunAt(0).empty());
  EXPECT_TRUE(buf.Append({9, 0, 0, 0}, Record(12, 9)));  // the emptied buffer takes entries again
  EXPECT_EQ(buf.entries(), 1u);
}

TEST(TraceBufferTest, PreallocateHoldsTheWholeCapacityAndAppendsUseIt) {
  constexpr size_t kChunk = 64 * 1024;
  TraceBuffer buf(6 * kChunk);
  ASSERT_TRUE(buf.Append({}, Record(1000, 1)));
  buf.Preallocate();
  EXPECT_EQ(buf.held_bytes(), 6 * kChunk);
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(buf.Append({}, Record(1000, 1)));  // about 5 chunks
  EXPECT_EQ(buf.held_bytes(), 6 * kChunk);
  buf.Preallocate();  // nothing more to take
  EXPECT_EQ(buf.held_bytes(), 6 * kChunk);
}

TEST(TraceBufferTest, RetiredChunksAreKeptForReuseUpToTheCapacity) {
  constexpr size_t kChunk = 64 * 1024;
  constexpr size_t kPerChunk = kChunk / 1040;  // 1000-byte records take 1040 bytes each
  TraceBuffer buf(8 * kChunk);
  auto fill_chunks = [&](size_t chunks) {
    std::set<const uint8_t*> starts;
    for (size_t i = 0; i < chunks * kPerChunk; ++i) {
      EXPECT_TRUE(buf.Append({}, Record(1000, 1)));
    }
    while (!buf.RunAt(0).empty()) {
      std::span<const uint8_t> run = buf.RunAt(0);
      starts.insert(run.data());
      buf.Consume(run.size(), run.size() / 1040);
    }
    return starts;
  };
  for (size_t i = 0; i < 2 * kPerChunk; ++i) ASSERT_TRUE(buf.Append({}, Record(1000, 1)));
  EXPECT_EQ(buf.RunAt(0).size(), kPerChunk * 1040);  // one run per chunk
  EXPECT_EQ(buf.RunAt(1).size(), kPerChunk * 1040);
  EXPECT_NE(buf.RunAt(0).data(), buf.RunAt(1).data());
  EXPECT_TRUE(buf.RunAt(2).empty());
  buf.Consume(buf.RunAt(0).size(), kPerChunk);
  buf.Consume(buf.RunAt(0).size(), kPerChunk);
  std::set<const uint8_t*> first = fill_chunks(4);
  ASSERT_EQ(first.size(), 4u);
  EXPECT_EQ(buf.held_bytes(), 4 * kChunk);  // emptied, the chunks are kept
  std::set<const uint8_t*> second = fill_chunks(4);
  EXPECT_EQ(second, first);  // and reused
  EXPECT_EQ(buf.held_bytes(), 4 * kChunk);
  fill_chunks(8);
  EXPECT_EQ(buf.held_bytes(), 8 * kChunk);
  buf.set_capacity(2 * kChunk);
  EXPECT_EQ(buf.held_bytes(), 2 * kChunk);
  buf.Clear();
  EXPECT_EQ(buf.held_bytes(), 0u);
}

TEST(TraceBufferTest, CopyIsFrozen) {
  TraceBuffer buf(1 << 20);
  buf.NoteLost(2);
  for (uint8_t i = 0; i < 5; ++i) ASSERT_TRUE(buf.Append({i, 0, 0, 0}, Record(100, i)));
  std::unique_ptr<TraceBuffer> copy = buf.Copy();
  buf.Clear();
  ASSERT_TRUE(buf.Append({42, 0, 0, 0}, Record(10, 0)));
  std::vector<uint64_t> seen;
  copy->ForEach([&](const TraceEntry& e) { seen.push_back(e.meta.timestamp); });
  EXPECT_EQ(seen, (std::vector<uint64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(copy->written(), 7u);
  EXPECT_EQ(copy->lost_total(), 2u);
}

}  // namespace
}  // namespace udiag::service
