#include "service/page_overlap.h"

#include <gtest/gtest.h>

#include <vector>

namespace udiag::service {
namespace {

using Items = std::vector<TimedItem>;

TimedItem Page(uint64_t time, uint16_t cpu, uint32_t page, uint64_t span_ns) { return {time, cpu, page, span_ns}; }
TimedItem Record(uint64_t time, uint16_t cpu) { return {time, cpu}; }

// Runs back to back in one array, as a drain round stages them.
struct Round {
  Items items;
  std::vector<TimeRun> runs;
  void AddRun(const Items& run) {
    runs.push_back({items.size(), items.size() + run.size()});
    items.insert(items.end(), run.begin(), run.end());
  }
  // apart[] for `pages` pages, and whether any was set.
  std::vector<bool> Mark(size_t pages, bool* any = nullptr) const {
    std::vector<bool> apart(pages, false);
    const bool set = MarkOverlappingPages(runs, [&](size_t i) { return items[i]; }, apart);
    if (any) *any = set;
    return apart;
  }
};

TEST(PageOverlapTest, PagesOfTwoThreadsThatTookTurnsOnACpuAreBothTakenApart) {
  Round round;
  round.AddRun({Page(100, 0, 0, 50)});  // 100..150
  round.AddRun({Page(120, 0, 1, 50)});  // begins within it
  bool any = false;
  EXPECT_EQ(round.Mark(2, &any), (std::vector<bool>{true, true}));
  EXPECT_TRUE(any);
}

TEST(PageOverlapTest, ARecordWithinAPageOnItsCpuTakesOnlyThePageApart) {
  Round round;
  round.AddRun({Page(100, 1, 0, 50)});
  round.AddRun({Record(90, 1), Record(130, 1), Record(200, 1)});
  EXPECT_EQ(round.Mark(1), (std::vector<bool>{true}));
}

TEST(PageOverlapTest, OtherCpusAndOtherTimesLeaveAPageWhole) {
  Round round;
  round.AddRun({Page(100, 0, 0, 50), Page(300, 0, 1, 50)});
  // Within the first page's span but on another cpu; between the pages and
  // after them on the same cpu.
  round.AddRun({Record(120, 1), Page(140, 1, 2, 100), Record(200, 0), Record(351, 0)});
  bool any = true;
  EXPECT_EQ(round.Mark(3, &any), (std::vector<bool>(3, false)));
  EXPECT_FALSE(any);
}

TEST(PageOverlapTest, ItemsAtEitherEndOfTheSpanCount) {
  Round at_start;
  at_start.AddRun({Page(100, 0, 0, 50)});
  at_start.AddRun({Record(100, 0)});
  EXPECT_EQ(at_start.Mark(1), (std::vector<bool>{true}));

  Round at_end;
  at_end.AddRun({Page(100, 0, 0, 50)});
  at_end.AddRun({Record(150, 0)});
  EXPECT_EQ(at_end.Mark(1), (std::vector<bool>{true}));

  Round just_after;
  just_after.AddRun({Page(100, 0, 0, 50)});
  just_after.AddRun({Record(151, 0)});
  EXPECT_EQ(just_after.Mark(1), (std::vector<bool>{false}));
}

TEST(PageOverlapTest, ARunNeverOverlapsItself) {
  Round round;
  round.AddRun({Page(100, 0, 0, 50), Record(120, 0), Page(130, 0, 1, 50)});
  EXPECT_EQ(round.Mark(2), (std::vector<bool>(2, false)));
}

// The search finds an item deep in a long run, past others on other cpus.
TEST(PageOverlapTest, FindsTheOverlapInALongRunOnAnyCpuMix) {
  Items long_run;
  for (uint64_t t = 0; t < 1000; ++t) long_run.push_back(Record(t * 10, t == 731 ? 3 : 2));
  Round round;
  round.AddRun(long_run);
  round.AddRun({Page(7300, 3, 0, 15), Page(8000, 3, 1, 5000)});
  // 7310 is record 731 (cpu 3); no other record from 8000 on is on cpu 3.
  EXPECT_EQ(round.Mark(2), (std::vector<bool>{true, false}));
}

}  // namespace
}  // namespace udiag::service
