#include "service/run_merge.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace udiag::service {
namespace {

// Merges `runs` of `times` and returns the indexes in the order visited.
std::vector<size_t> Merge(const std::vector<uint64_t>& times, std::vector<TimeRun> runs) {
  std::vector<size_t> order;
  MergeRunsInTimeOrder(
      runs, [&](size_t i) { return times[i]; }, [&](size_t i) { order.push_back(i); });
  EXPECT_TRUE(runs.empty());
  return order;
}

TEST(RunMergeTest, InterleavedRunsComeOutInTimeOrder) {
  // Three threads: one alone for a while, two taking turns record by record.
  const std::vector<uint64_t> times = {1, 2, 3, 10, 11,  // run 0
                                       4, 6, 8, 12,      // run 1
                                       5, 7, 9, 13};     // run 2
  std::vector<size_t> order = Merge(times, {{0, 5}, {5, 9}, {9, 13}});
  std::vector<uint64_t> merged;
  for (size_t i : order) merged.push_back(times[i]);
  EXPECT_EQ(merged, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}));
}

TEST(RunMergeTest, EmptyAndSingleRuns) {
  EXPECT_TRUE(Merge({}, {}).empty());
  EXPECT_EQ(Merge({5, 6}, {{0, 0}, {0, 2}, {2, 2}}), (std::vector<size_t>{0, 1}));
}

TEST(RunMergeTest, RandomRunsAreMergedStablyAndCompletely) {
  std::mt19937_64 random(42);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint64_t> times;
    std::vector<TimeRun> runs;
    const int run_count = 1 + static_cast<int>(random() % 9);
    for (int r = 0; r < run_count; ++r) {
      const size_t begin = times.size();
      uint64_t t = random() % 50;
      for (uint64_t n = random() % 40; n > 0; --n) {
        t += random() % 4;  // equal times too
        times.push_back(t);
      }
      runs.push_back({begin, times.size()});
    }
    std::vector<size_t> order = Merge(times, runs);
    ASSERT_EQ(order.size(), times.size());
    for (size_t k = 1; k < order.size(); ++k) ASSERT_LE(times[order[k - 1]], times[order[k]]);
    std::vector<size_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 0; k < sorted.size(); ++k) ASSERT_EQ(sorted[k], k) << "each record exactly once";
    // Each run's own records keep their order.
    for (const TimeRun& run : runs) {
      size_t last = run.begin;
      for (size_t i : order) {
        if (i < run.begin || i >= run.end) continue;
        ASSERT_GE(i, last);
        last = i;
      }
    }
  }
}

// Merges per key and returns the indexes in the order visited.
std::vector<size_t> MergePerKey(const std::vector<uint64_t>& times, const std::vector<uint32_t>& keys,
                                std::vector<TimeRun> runs) {
  std::vector<size_t> order;
  std::vector<KeyedRun> stretches;
  std::vector<TimeRun> merged;
  MergeRunsInTimeOrderPerKey(
      runs, stretches, merged, [&](size_t i) { return keys[i]; }, [&](size_t i) { return times[i]; },
      [&](size_t i) { order.push_back(i); });
  EXPECT_TRUE(runs.empty());
  return order;
}

TEST(RunMergeTest, PerKeyEachKeysRecordsComeOutInTimeOrderAndTogether) {
  // Two threads on two cpus at once, then each moves to the other cpu.
  const std::vector<uint64_t> times = {1, 3, 5, 7, 9,  11,   // thread A: cpu 0 then cpu 1
                                       2, 4, 6, 8, 10, 12};  // thread B: cpu 1 then cpu 0
  const std::vector<uint32_t> keys = {0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0};
  std::vector<size_t> order = MergePerKey(times, keys, {{0, 6}, {6, 12}});
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 9, 10, 11, 6, 7, 8, 3, 4, 5}));
}

TEST(RunMergeTest, PerKeyRandomRunsAreMergedCompletely) {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint64_t> times;
    std::vector<uint32_t> keys;
    std::vector<TimeRun> runs;
    for (int r = 1 + static_cast<int>(random() % 9); r > 0; --r) {
      const size_t begin = times.size();
      uint64_t t = random() % 50;
      for (uint64_t n = random() % 40; n > 0; --n) {
        t += random() % 4;
        times.push_back(t);
        keys.push_back(
            static_cast<uint32_t>(random() % 3 == 0 ? random() % 4 : (keys.empty() ? 0 : keys.back())));
      }
      runs.push_back({begin, times.size()});
    }
    std::vector<size_t> order = MergePerKey(times, keys, runs);
    ASSERT_EQ(order.size(), times.size());
    for (size_t k = 1; k < order.size(); ++k) {
      const size_t a = order[k - 1], b = order[k];
      if (keys[a] == keys[b]) {
        ASSERT_LE(times[a], times[b]) << "one key's records in time order";
      } else {
        ASSERT_LT(keys[a], keys[b]) << "a key's records all together";
      }
    }
    std::vector<size_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 0; k < sorted.size(); ++k) ASSERT_EQ(sorted[k], k) << "each record exactly once";
  }
}

}  // namespace
}  // namespace udiag::service
