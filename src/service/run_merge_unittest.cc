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

}  // namespace
}  // namespace udiag::service
