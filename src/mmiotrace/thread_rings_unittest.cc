#include "mmiotrace/thread_rings.h"

#include <gtest/gtest.h>

#include <atomic>
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
