#include "base/tsc_clock.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/tsc.h"
#include "gtest/gtest.h"

namespace udiag::base {
namespace {

// Distance of `ns` from the interval [lo, hi].
int64_t OutsideBy(uint64_t ns, uint64_t lo, uint64_t hi) {
  if (ns < lo) return static_cast<int64_t>(lo - ns);
  if (ns > hi) return static_cast<int64_t>(ns - hi);
  return 0;
}

// Converts "now" and returns how far it lands from the clock_gettime bracket
// around the rdtsc; the tightest of a few tries, so preemption does not count.
int64_t ErrorNowNs(TscClock& clock) {
  int64_t best = INT64_MAX;
  uint64_t best_bracket = UINT64_MAX;
  for (int i = 0; i < 20; ++i) {
    uint32_t cpu;
    const uint64_t before = MonotonicNs();
    const uint64_t tsc = ReadTsc(&cpu);
    const uint64_t after = MonotonicNs();
    if (after - before < best_bracket) {
      best_bracket = after - before;
      best = OutsideBy(clock.ToMonotonic(tsc), before, after);
    }
  }
  return best;
}

TEST(TscTest, InvariantTscMatchesCpuinfo) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string text((std::istreambuf_iterator<char>(cpuinfo)), std::istreambuf_iterator<char>());
  text = text.substr(0, text.find("\n\n"));  // the first CPU
  auto has = [&text](const char* flag) {
    return text.find(std::string(" ") + flag + " ") != std::string::npos ||
           text.find(std::string(" ") + flag + "\n") != std::string::npos;
  };
  EXPECT_EQ(InvariantTscAvailable(), has("constant_tsc") && has("nonstop_tsc"));
}

TEST(TscTest, ReadTscAdvancesAndGivesACpu) {
  uint32_t cpu = 0xffffffff;
  const uint64_t a = ReadTsc(&cpu);
  EXPECT_LT(cpu, std::thread::hardware_concurrency());
  const uint64_t b = ReadTsc(&cpu);
  EXPECT_GT(b, a);
}

TEST(TscTest, CurrentCpuFollowsTheThread) {
  cpu_set_t old_set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(old_set), &old_set), 0);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &old_set)) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    EXPECT_EQ(CurrentCpu(), static_cast<uint32_t>(cpu));
  }
  sched_setaffinity(0, sizeof(old_set), &old_set);
}

TEST(TscClockTest, SaneRightAfterConstruction) {
  TscClock clock;
  EXPECT_EQ(clock.anchor_count(), 2u);
  EXPECT_LT(ErrorNowNs(clock), 2'000);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // Extrapolated 20 ms on a 2 ms calibration.
  EXPECT_LT(ErrorNowNs(clock), 20'000);
}

TEST(TscClockTest, UnderAMicrosecondAfterCalibration) {
  TscClock clock;
  for (int i = 0; i < 30; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    clock.Sample();
  }
  // Interpolated (just before the last anchor) and extrapolated (after it).
  uint32_t cpu;
  const uint64_t before = MonotonicNs();
  const uint64_t tsc = ReadTsc(&cpu);
  const uint64_t after = MonotonicNs();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  clock.Sample();
  if (after - before < 5'000) {
    EXPECT_LT(OutsideBy(clock.ToMonotonic(tsc), before, after), 1'000);
  }

  std::vector<int64_t> errors;
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    errors.push_back(ErrorNowNs(clock));
  }
  std::sort(errors.begin(), errors.end());
  EXPECT_LT(errors[errors.size() / 2], 1'000);
  EXPECT_LT(errors[errors.size() * 9 / 10], 2'000);
}

TEST(TscClockTest, NeverGoesBackwardsOnTheRealClock) {
  TscClock clock;
  uint64_t previous = 0;
  uint32_t cpu;
  for (int i = 0; i < 200'000; ++i) {
    if (i % 10'000 == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      clock.Sample();
    }
    const uint64_t ns = clock.ToMonotonic(ReadTsc(&cpu));
    ASSERT_GE(ns, previous) << i;
    previous = ns;
  }
}

TEST(TscClockTest, InterpolatesBetweenAnchorsExactly) {
  // 3 ticks per ns, then 2 ticks per ns.
  TscClock clock({3'000'000'000, 1'000'000'000}, {6'000'000'000, 2'000'000'000});
  clock.AddAnchor({8'000'000'000, 3'000'000'000});
  EXPECT_EQ(clock.ToMonotonic(3'000'000'000), 1'000'000'000u);
  EXPECT_NEAR(static_cast<double>(clock.ToMonotonic(4'500'000'000)), 1'500'000'000.0, 1);
  EXPECT_EQ(clock.ToMonotonic(6'000'000'000), 2'000'000'000u);
  EXPECT_NEAR(static_cast<double>(clock.ToMonotonic(7'000'000'000)), 2'500'000'000.0, 1);
  EXPECT_EQ(clock.ToMonotonic(8'000'000'000), 3'000'000'000u);
  // Outside: the longest baseline, 5e9 ticks over 2e9 ns.
  EXPECT_NEAR(static_cast<double>(clock.ToMonotonic(13'000'000'000)), 5'000'000'000.0, 2);
}

// ToMonotonic starts from the segment it used last: ticks out of order, in
// any segment, still get their own segment's line.
// A page's ticks are converted along one line: its segment's slope from the
// page's first tick, and the longest baseline's past the last anchor.
TEST(TscClockTest, ALineFollowsTheSegmentOfItsStart) {
  TscClock clock({3'000'000'000, 1'000'000'000}, {6'000'000'000, 2'000'000'000});
  clock.AddAnchor({8'000'000'000, 3'000'000'000});
  const TscClock::Line first = clock.LineAt(4'500'000'000);  // 3 ticks per ns
  EXPECT_TRUE(first.Reaches(4'500'003'000));
  EXPECT_FALSE(first.Reaches(4'499'999'999));
  EXPECT_NEAR(static_cast<double>(first.At(4'500'003'000)), 1'500'001'000.0, 2);  // two truncations
  const TscClock::Line second = clock.LineAt(7'000'000'000);  // 2 ticks per ns
  EXPECT_NEAR(static_cast<double>(second.At(7'000'002'000)), 2'500'001'000.0, 1);
  const TscClock::Line past = clock.LineAt(13'000'000'000);  // 5e9 ticks over 2e9 ns
  EXPECT_NEAR(static_cast<double>(past.At(13'000'005'000)), 5'000'002'000.0, 2);
  EXPECT_FALSE(past.Reaches(13'000'000'000 + (uint64_t{1} << 32))) << "the product would not fit";
}

TEST(TscClockTest, TicksInAnyOrderFindTheirSegment) {
  TscClock clock({3'000'000'000, 1'000'000'000}, {6'000'000'000, 2'000'000'000});
  clock.AddAnchor({8'000'000'000, 3'000'000'000});
  clock.AddAnchor({9'000'000'000, 3'500'000'000});
  const std::pair<uint64_t, double> expected[] = {
      {7'000'000'000, 2.5e9}, {4'500'000'000, 1.5e9}, {8'500'000'000, 3.25e9}, {3'000'000'000, 1e9},
      {8'000'000'000, 3e9},   {6'000'000'000, 2e9},   {5'999'999'999, 2e9},    {8'999'999'999, 3.5e9}};
  for (auto [tsc, ns] : expected) EXPECT_NEAR(static_cast<double>(clock.ToMonotonic(tsc)), ns, 1) << tsc;
}

// Several rings are drained one after another, so a conversion often goes
// back in time: it gets the line, the value a clock that saw only that tick
// gives, in the last segment and past the last anchor alike.
TEST(TscClockTest, TicksBeforeTheLastConversionGetTheLine) {
  const TscClock::Anchor first{3'000'000'000, 1'000'000'000}, second{6'000'000'000, 2'000'000'000};
  TscClock clock(first, second);
  clock.AddAnchor({8'000'000'000, 3'000'000'000});
  const uint64_t ticks[] = {8'900'000'000, 7'100'000'000, 8'400'000'000, 6'500'000'000, 9'000'000'000, 8'000'000'001};
  for (uint64_t tsc : ticks) {
    TscClock alone(first, second);
    alone.AddAnchor({8'000'000'000, 3'000'000'000});
    EXPECT_EQ(clock.ToMonotonic(tsc), alone.ToMonotonic(tsc)) << tsc;
  }
}

TEST(TscClockTest, ExtrapolatesBackwardsAndSaturates) {
  TscClock clock({3'000'000'000, 1'000'000'000}, {6'000'000'000, 2'000'000'000});
  EXPECT_NEAR(static_cast<double>(clock.ToMonotonic(1'500'000'000)), 500'000'000.0, 1);
  EXPECT_LE(clock.ToMonotonic(0), 1u) << "3e9 ticks before = 1e9 ns before";
  TscClock fresh({3'000'000'000, 100}, {6'000'000'000, 1'000'000'100});
  EXPECT_EQ(fresh.ToMonotonic(0), 0u) << "clamped, not wrapped";
  // 1000 ns per tick: UINT64_MAX ticks overflow 64 bits of ns.
  TscClock slow({0, 0}, {1'000'000, 1'000'000'000});
  EXPECT_EQ(slow.ToMonotonic(UINT64_MAX / 2), UINT64_MAX) << "saturated, not wrapped";
  EXPECT_EQ(slow.ToMonotonic(UINT64_MAX), UINT64_MAX);
}

TEST(TscClockTest, NewAnchorDoesNotTakeTimeBack) {
  // 1 tick per ns, then the real rate turns out slower.
  TscClock clock({0, 0}, {1'000'000'000, 1'000'000'000});
  EXPECT_EQ(clock.ToMonotonic(2'000'000'000), 2'000'000'000u);  // extrapolated
  clock.AddAnchor({3'000'000'000, 2'500'000'000});
  // Interpolation alone would give 1.825e9 here.
  EXPECT_GE(clock.ToMonotonic(2'100'000'000), 2'000'000'000u);
  EXPECT_GE(clock.ToMonotonic(2'900'000'000), clock.ToMonotonic(2'100'000'000));
  EXPECT_EQ(clock.ToMonotonic(3'000'000'000), 2'500'000'000u);
}

TEST(TscClockTest, LineIsMonotonicForFixedAnchors) {
  TscClock clock({1'000'000, 500'000}, {3'000'000, 1'400'000});
  std::mt19937_64 rng(7);
  uint64_t tsc = 1'000'000;
  for (int i = 0; i < 40; ++i) {
    tsc += 1'000'000 + rng() % 5'000'000;
    clock.AddAnchor({tsc + 2'000'000, 1'400'000 + (tsc - 1'000'000) / 2 + rng() % 300'000 + 1'000'000 * i});
  }
  ASSERT_GE(clock.anchor_count(), 16u);
  // Descending, so that the hold against going back never applies and the
  // line itself is tested.
  std::vector<uint64_t> ticks(20'000);
  for (uint64_t& t : ticks) t = rng() % (tsc * 2);
  std::sort(ticks.begin(), ticks.end(), std::greater<>());
  uint64_t previous = UINT64_MAX;
  for (uint64_t t : ticks) {
    const uint64_t ns = clock.ToMonotonic(t);
    ASSERT_LE(ns, previous) << t;
    previous = ns;
  }
}

TEST(TscClockTest, IgnoresAnchorsTooCloseOrOutOfOrder) {
  TscClock clock({0, 0}, {10'000'000, 10'000'000});
  clock.AddAnchor({10'000'100, 10'000'100});  // 100 ns later
  clock.AddAnchor({5'000'000, 20'000'000});   // tsc went back
  clock.AddAnchor({20'000'000, 9'000'000});   // ns went back
  EXPECT_EQ(clock.anchor_count(), 2u);
  clock.AddAnchor({20'000'000, 20'000'000});
  EXPECT_EQ(clock.anchor_count(), 3u);
}

TEST(TscClockTest, MemoryIsBoundedAndFollowsRateChanges) {
  // One anchor a second for two hours at 2 ticks/ns; then the rate seen
  // against CLOCK_MONOTONIC shifts by 100 ppm (an NTP slew) for an hour.
  TscClock clock({0, 0}, {2'000'000'000, 1'000'000'000});
  uint64_t tsc = 2'000'000'000, ns = 1'000'000'000;
  for (int s = 0; s < 7200; ++s) {
    tsc += 2'000'000'000;
    ns += 1'000'000'000;
    clock.AddAnchor({tsc, ns});
    ASSERT_LE(clock.anchor_count(), TscClock::kMaxAnchors);
  }
  for (int s = 0; s < 3600; ++s) {
    tsc += 2'000'000'000;
    ns += 1'000'100'000;
    clock.AddAnchor({tsc, ns});
    ASSERT_LE(clock.anchor_count(), TscClock::kMaxAnchors);
  }
  EXPECT_GE(clock.anchor_count(), 3u);
  // One second past the last anchor: the old rate would be 100 us off.
  const double got = static_cast<double>(clock.ToMonotonic(tsc + 2'000'000'000));
  EXPECT_NEAR(got, static_cast<double>(ns + 1'000'100'000), 1'000);
  // Recent history stays exact.
  EXPECT_NEAR(static_cast<double>(clock.ToMonotonic(tsc - 1'000'000'000)),
              static_cast<double>(ns - 500'050'000), 1);
}

}  // namespace
}  // namespace udiag::base
