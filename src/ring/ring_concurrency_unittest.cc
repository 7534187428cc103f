// One producer thread and one consumer thread on one ring, as in production.
// The writer attaches to the reader's own mapping where it can, so that
// ThreadSanitizer sees both sides of every access.
#include <poll.h>
#include <sys/eventfd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "base/scoped_fd.h"
#include "gtest/gtest.h"
#include "ring/ring_reader.h"
#include "ring/ring_test_util.h"
#include "ring/ring_writer.h"

namespace udiag::ring {
namespace {

// Record `seq`: 8 bytes of seq, then filler bytes derived from it.
uint32_t LengthFor(uint64_t seq, uint32_t max_filler) {
  return 8 + static_cast<uint32_t>((seq * 2654435761u) % (max_filler + 1));
}

bool WriteRecord(RingWriter& writer, uint64_t seq, uint32_t max_filler, bool* wake = nullptr,
                 uint16_t cpu = 0) {
  const uint32_t len = LengthFor(seq, max_filler);
  uint8_t* p = writer.Reserve(len, 1 + seq % 100, cpu, seq);
  if (p == nullptr) return false;
  std::memcpy(p, &seq, 8);
  for (uint32_t i = 8; i < len; ++i) p[i] = static_cast<uint8_t>(seq + i);
  const bool must_wake = writer.Commit();
  if (wake != nullptr) *wake = must_wake;
  return true;
}

// Checks a record against its sequence number; returns it, or ~0 when wrong.
// The payload reads back padded with zeros to whole words.
uint64_t CheckRecord(const RecordView& r, uint32_t max_filler) {
  uint64_t seq;
  if (r.payload.size() < 8) return ~uint64_t{0};
  std::memcpy(&seq, r.payload.data(), 8);
  const uint32_t len = LengthFor(seq, max_filler);
  if (r.timestamp != seq || r.type != 1 + seq % 100 || r.payload.size() != PaddedPayload(len)) {
    return ~uint64_t{0};
  }
  for (uint32_t i = 8; i < r.payload.size(); ++i) {
    if (r.payload[i] != (i < len ? static_cast<uint8_t>(seq + i) : 0)) return ~uint64_t{0};
  }
  return seq;
}

// Drains until `done` is set and nothing is left, calling `on_seq` per record.
template <typename OnSeq>
uint64_t ConsumeUntilDone(RingReader& reader, const std::atomic<bool>& done, uint32_t max_filler,
                          OnSeq on_seq) {
  uint64_t lost = 0;
  while (!done.load(std::memory_order_acquire) || !reader.empty()) {
    const size_t n = reader.Drain([&](const RecordView& r) { on_seq(CheckRecord(r, max_filler)); },
                                  4096);
    lost += reader.TakeLost();
    if (n == 0) std::this_thread::yield();
  }
  return lost + reader.TakeLost();
}

// A producer thread on the reader's mapping that writes records 0..count-1
// and stops at the first one refused; sets `done` when it stops.
std::thread WriteUntilAFailure(RingReader& reader, uint64_t count, uint32_t max_filler, std::atomic<bool>& done) {
  return std::thread([&reader, count, max_filler, &done] {
    RingWriter writer;
    writer.Attach(RingReaderTestPeer::Base(reader));
    for (uint64_t seq = 0; seq < count; ++seq) {
      if (!WriteRecord(writer, seq, max_filler)) break;
    }
    done.store(true, std::memory_order_release);
  });
}

TEST(RingConcurrencyTest, NothingLostWhenTheRingHoldsEverything) {
  constexpr uint64_t kRecords = 2'000'000;
  constexpr uint32_t kMaxFiller = 16;  // records of 24..40 bytes: < 64 MiB in all
  TestRing ring(kMaxDataSize);
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  std::atomic<bool> done{false};
  std::thread producer = WriteUntilAFailure(*reader, kRecords, kMaxFiller, done);
  uint64_t expected = 0, wrong = 0;
  const uint64_t lost = ConsumeUntilDone(*reader, done, kMaxFiller, [&](uint64_t seq) {
    wrong += seq != expected;
    expected = seq + 1;
  });
  producer.join();
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(expected, kRecords);
  EXPECT_FALSE(reader->broken());
}

// The producer retries when the ring is full: every record arrives, in order,
// across thousands of wrap-arounds, and each failed try is one lost count.
class RingBackpressureTest : public testing::TestWithParam<bool> {};

TEST_P(RingBackpressureTest, OrderKeptAndLostCountedExactly) {
  const bool shared_mapping = GetParam();
  constexpr uint64_t kRecords = 2'000'000;
  constexpr uint32_t kMaxFiller = 120;
  TestRing ring(64 * 1024);
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  std::atomic<bool> done{false};
  uint64_t failed_tries = 0;  // producer's, read after join
  std::thread producer([&] {
    RingWriter writer;
    writer.Attach(shared_mapping ? RingReaderTestPeer::Base(*reader) : ring.base());
    for (uint64_t seq = 0; seq < kRecords; ++seq) {
      while (!WriteRecord(writer, seq, kMaxFiller)) {
        ++failed_tries;
        std::this_thread::yield();
      }
    }
    done.store(true, std::memory_order_release);
  });
  uint64_t expected = 0, wrong = 0;
  const uint64_t lost = ConsumeUntilDone(*reader, done, kMaxFiller, [&](uint64_t seq) {
    wrong += seq != expected;
    expected = seq + 1;
  });
  producer.join();
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(expected, kRecords);
  EXPECT_EQ(lost, failed_tries);
  EXPECT_GT(ring.header()->head.load(), 100u * 64 * 1024) << "wrapped";
  EXPECT_FALSE(reader->broken());
}

INSTANTIATE_TEST_SUITE_P(Mappings, RingBackpressureTest, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& info) {
                           return info.param ? "SharedMapping" : "SeparateMappings";
                         });

// The producer never retries and the consumer is slow: exactly the records
// the producer saw fail are missing, the rest arrive in order.
TEST(RingConcurrencyTest, DroppedRecordsAreExactlyTheLostOnes) {
  constexpr uint64_t kRecords = 1'000'000;
  constexpr uint32_t kMaxFiller = 40;
  TestRing ring(4096);
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  std::atomic<bool> done{false};
  std::vector<bool> dropped(kRecords);  // producer's, read after join
  std::thread producer([&] {
    RingWriter writer;
    writer.Attach(RingReaderTestPeer::Base(*reader));
    for (uint64_t seq = 0; seq < kRecords; ++seq) {
      dropped[seq] = !WriteRecord(writer, seq, kMaxFiller);
    }
    done.store(true, std::memory_order_release);
  });
  std::vector<uint64_t> delivered;
  delivered.reserve(kRecords);
  uint64_t lost = 0;
  for (int round = 0; !done.load(std::memory_order_acquire) || !reader->empty(); ++round) {
    reader->Drain([&](const RecordView& r) { delivered.push_back(CheckRecord(r, kMaxFiller)); }, 64);
    lost += reader->TakeLost();
    if (round % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  lost += reader->TakeLost();
  producer.join();

  uint64_t dropped_count = 0;
  for (bool d : dropped) dropped_count += d;
  EXPECT_GT(dropped_count, 0u) << "the consumer was never behind: nothing tested";
  EXPECT_GT(delivered.size(), 0u);
  EXPECT_EQ(lost, dropped_count);
  EXPECT_EQ(delivered.size() + dropped_count, kRecords);
  uint64_t bad = 0;
  for (size_t i = 0; i < delivered.size(); ++i) {
    const uint64_t seq = delivered[i];
    bad += seq >= kRecords || dropped[seq] || (i > 0 && seq <= delivered[i - 1]);
  }
  EXPECT_EQ(bad, 0u);
}

// A consumer that must not lose records lets the writer wait for room: a
// producer far faster than a slow consumer, on a small ring, loses nothing
// and its records arrive in order. The reader wakes the waiting writer.
TEST(RingConcurrencyTest, WaitingWriterLosesNothingToASlowConsumer) {
  constexpr uint64_t kRecords = 200'000;
  constexpr uint32_t kMaxFiller = 40;
  TestRing ring(4096);
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  reader->SetWriterWait(60'000);
  std::atomic<bool> done{false};
  std::thread producer = WriteUntilAFailure(*reader, kRecords, kMaxFiller, done);
  uint64_t expected = 0, wrong = 0, lost = 0;
  for (int round = 0; !done.load(std::memory_order_acquire) || !reader->empty(); ++round) {
    reader->Drain(
        [&](const RecordView& r) {
          const uint64_t seq = CheckRecord(r, kMaxFiller);
          wrong += seq != expected;
          expected = seq + 1;
        },
        16);
    lost += reader->TakeLost();
    if (round % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  producer.join();
  EXPECT_EQ(lost + reader->TakeLost(), 0u);
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(expected, kRecords);
  EXPECT_EQ(ring.header()->writer_waiting.load(), 0u);
}

// The producer moves between cpus every 50 records, so each run of them
// fills one page, closed before it is full. The consumer takes closed pages
// whole and reads their events from the staged page, holding the open page
// until the producer is done: every record arrives once, in order, with its
// cpu, and every page but the last whole.
TEST(RingConcurrencyTest, PagesTakenWholeAcrossCpuChanges) {
  constexpr uint64_t kRecords = 500'000;
  constexpr uint32_t kMaxFiller = 60;
  auto cpu_for = [](uint64_t seq) { return static_cast<uint16_t>(seq / 50 % 3); };
  TestRing ring(64 * 1024);
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  std::atomic<bool> done{false};
  std::thread producer([&] {
    RingWriter writer;
    writer.Attach(RingReaderTestPeer::Base(*reader));
    for (uint64_t seq = 0; seq < kRecords; ++seq) {
      while (!WriteRecord(writer, seq, kMaxFiller, nullptr, cpu_for(seq))) std::this_thread::yield();
    }
    done.store(true, std::memory_order_release);
  });
  uint64_t expected = 0, wrong = 0, pages = 0;
  std::vector<uint8_t> copy(kMaxPayload);
  auto take_record = [&](const RecordHead& head, const PayloadSource& payload) {
    payload.CopyTo(copy.data());
    const uint64_t seq =
        CheckRecord({head.type, head.cpu, head.timestamp, {copy.data(), payload.size()}}, kMaxFiller);
    wrong += seq != expected || head.cpu != cpu_for(seq);
    expected = seq + 1;
  };
  for (bool finished = false; !finished || !reader->empty();) {
    finished = done.load(std::memory_order_acquire);
    reader->StagePages(
        take_record,
        [&](const PageHead& head, const PayloadSource& page) {
          ++pages;
          wrong += head.cpu != cpu_for(expected);
          RingReader::StageEventsOfPage(page, take_record);
        },
        256, /*hold_open_page=*/!finished);
    reader->Release();
  }
  producer.join();
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(expected, kRecords);
  EXPECT_EQ(pages, kRecords / 50 - 1);
  EXPECT_FALSE(reader->broken());
}

// The consumer sleeps on an eventfd when idle; producers wake it through
// Commit()'s return value. At each pause the producer waits until the consumer
// is asleep, so every pause ends with a wake whatever the scheduler does. The
// long poll timeout only bounds a lost wake (see RingWriter::Commit).
TEST(RingConcurrencyTest, SleepingConsumerIsWoken) {
  constexpr uint64_t kRecords = 20'000;
  constexpr uint64_t kPauses = 20;
  constexpr uint32_t kMaxFiller = 8;
  TestRing ring(1 << 20);
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  base::ScopedFd wake_fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  ASSERT_TRUE(wake_fd.valid());
  std::atomic<bool> done{false};
  std::atomic<uint64_t> sleeps{0};
  uint64_t wakes_sent = 0;
  std::thread producer([&] {
    RingWriter writer;
    writer.Attach(RingReaderTestPeer::Base(*reader));
    for (uint64_t seq = 0; seq < kRecords; ++seq) {
      if (seq % (kRecords / kPauses) == 0 && seq != 0) {
        const uint64_t slept_before = seq / (kRecords / kPauses) - 1;
        while (sleeps.load(std::memory_order_acquire) <= slept_before) std::this_thread::yield();
      }
      bool wake = false;
      ASSERT_TRUE(WriteRecord(writer, seq, kMaxFiller, &wake));
      if (wake) {
        ++wakes_sent;
        const uint64_t one = 1;
        ASSERT_EQ(write(wake_fd.get(), &one, sizeof(one)), 8);
      }
    }
    done.store(true, std::memory_order_release);
  });
  uint64_t expected = 0, wrong = 0;
  while (!done.load(std::memory_order_acquire) || !reader->empty()) {
    const size_t n = reader->Drain(
        [&](const RecordView& r) {
          const uint64_t seq = CheckRecord(r, kMaxFiller);
          wrong += seq != expected;
          expected = seq + 1;
        },
        SIZE_MAX);
    if (n != 0) continue;
    reader->SetConsumerSleeping(true);
    if (reader->empty() && !done.load(std::memory_order_acquire)) {
      sleeps.fetch_add(1, std::memory_order_release);
      pollfd pfd{wake_fd.get(), POLLIN, 0};
      poll(&pfd, 1, 5000);
      uint64_t count;
      (void)!read(wake_fd.get(), &count, sizeof(count));
    }
    reader->SetConsumerSleeping(false);
  }
  producer.join();
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(expected, kRecords);
  EXPECT_GE(sleeps.load(), kPauses - 1);
  // A pause's first write finds the flag set, unless a wake left over from
  // a sleep the consumer skipped ended this sleep first: either way one was sent.
  EXPECT_GT(wakes_sent, 0u);
  EXPECT_EQ(reader->TakeLost(), 0u);
}

}  // namespace
}  // namespace udiag::ring
