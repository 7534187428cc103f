#include "mmiotrace/thread_rings.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <vector>

namespace udiag::mmiotrace {
namespace {

Record Numbered(int32_t thread, uint64_t seq) {
  Record r;
  r.map_id = thread;
  r.value = seq;
  return r;
}

TEST(ThreadRings, FullRingDropsAndCounts) {
  auto rings = std::make_unique<ThreadRings>();
  for (uint64_t i = 0; i < ThreadRings::kSlotRecords + 5; ++i) rings->Push(Numbered(0, i));
  std::vector<Record> out;
  EXPECT_EQ(rings->Drain(&out), 5u);
  ASSERT_EQ(out.size(), ThreadRings::kSlotRecords);
  EXPECT_EQ(out.back().value, ThreadRings::kSlotRecords - 1);
  out.clear();
  EXPECT_EQ(rings->Drain(&out), 0u);  // the count is since the last drain
  EXPECT_TRUE(out.empty());
}

// A thread keeps the ring it first pushed to, by pool address; a test's pool
// may reuse an earlier test's address, so each test pushes from a new thread.
void OnANewThread(const std::function<void()>& body) { std::thread(body).join(); }

void FillRing(ThreadRings* rings) {
  for (uint64_t i = 0; i < ThreadRings::kSlotRecords; ++i) rings->Push(Numbered(0, i));
}

// Pushes one record while a drainer is `late`; returns how many records were
// lost from the last drain on.
uint64_t PushWhileTheDrainerIsLate(ThreadRings* rings, std::chrono::milliseconds late,
                                   std::vector<Record>* out) {
  uint64_t lost = 0;
  std::thread drainer([&] {
    std::this_thread::sleep_for(late);
    lost += rings->Drain(out);
  });
  rings->Push(Numbered(0, ThreadRings::kSlotRecords));
  drainer.join();
  return lost + rings->Drain(out);
}

// A drainer that is late (starved of CPU) costs the producer time, not records.
TEST(ThreadRings, FullRingWaitsForARunningDrainer) {
  auto rings = std::make_unique<ThreadRings>(/*full_wait_ns=*/60'000'000'000);
  rings->SetDrainerRunning(true);
  constexpr uint64_t kTotal = 3 * ThreadRings::kSlotRecords + 5;
  std::vector<Record> out;
  uint64_t lost = 0;
  std::atomic<bool> done{false};
  std::thread drainer([&] {
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      lost += rings->Drain(&out);
    }
  });
  OnANewThread([&] {
    for (uint64_t i = 0; i < kTotal; ++i) rings->Push(Numbered(0, i));
  });
  done = true;
  drainer.join();
  lost += rings->Drain(&out);
  EXPECT_EQ(lost, 0u);
  ASSERT_EQ(out.size(), kTotal);
  for (uint64_t i = 0; i < kTotal; ++i) EXPECT_EQ(out[i].value, i);
}

// A drainer that stays away is given up on once: later records drop at once
// (a late drain does not save them) until it takes something; then a full
// ring waits again.
TEST(ThreadRings, StalledDrainerIsWaitedForOnceUntilItMoves) {
  auto rings = std::make_unique<ThreadRings>(/*full_wait_ns=*/1'000'000'000);
  rings->SetDrainerRunning(true);
  OnANewThread([&] {
    FillRing(rings.get());
    rings->Push(Numbered(0, ThreadRings::kSlotRecords));  // waits 1 s in vain
    std::vector<Record> out;
    EXPECT_EQ(PushWhileTheDrainerIsLate(rings.get(), std::chrono::milliseconds(300), &out), 2u);
    EXPECT_EQ(out.size(), ThreadRings::kSlotRecords);

    out.clear();
    FillRing(rings.get());
    EXPECT_EQ(PushWhileTheDrainerIsLate(rings.get(), std::chrono::milliseconds(10), &out), 0u);
    EXPECT_EQ(out.size(), ThreadRings::kSlotRecords + 1);
  });
}

TEST(ThreadRings, FullRingWithoutARunningDrainerDropsAtOnce) {
  auto rings = std::make_unique<ThreadRings>(/*full_wait_ns=*/60'000'000'000);
  OnANewThread([&] {
    FillRing(rings.get());
    std::vector<Record> out;
    EXPECT_EQ(PushWhileTheDrainerIsLate(rings.get(), std::chrono::milliseconds(300), &out), 1u);
    EXPECT_EQ(out.size(), ThreadRings::kSlotRecords);
  });
}

TEST(ThreadRings, ExitedThreadsGiveTheirRingBack) {
  auto rings = std::make_unique<ThreadRings>();
  std::vector<Record> out;
  uint64_t lost = 0;
  for (size_t i = 0; i < 3 * ThreadRings::kSlots; ++i) {
    std::thread([&] { rings->Push(Numbered(static_cast<int32_t>(i), i)); }).join();
    lost += rings->Drain(&out);
  }
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(out.size(), 3 * ThreadRings::kSlots);
}

TEST(ThreadRings, ConcurrentProducersKeepTheirOrderAndLoseNothingUncounted) {
  auto rings = std::make_unique<ThreadRings>();
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 50000;
  std::atomic<int> running{kThreads};
  std::vector<Record> out;
  uint64_t lost = 0;
  std::thread drainer([&] {
    while (running.load() > 0) lost += rings->Drain(&out);
    lost += rings->Drain(&out);
  });
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) rings->Push(Numbered(t, i));
      running.fetch_sub(1);
    });
  }
  for (std::thread& producer : producers) producer.join();
  drainer.join();
  EXPECT_EQ(out.size() + lost, kThreads * kPerThread);
  std::map<int32_t, uint64_t> next;
  for (const Record& r : out) {
    EXPECT_GE(r.value, next[r.map_id]) << "thread " << r.map_id << " out of order";
    next[r.map_id] = r.value + 1;
  }
}

}  // namespace
}  // namespace udiag::mmiotrace
