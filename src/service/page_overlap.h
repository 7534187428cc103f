// Which whole pages of a drain round must be taken apart before the per-cpu
// merge. A producer's page spans a stretch of time; when another thread ran
// on the same cpu during that stretch (the two took turns while the page was
// open), their items interleave in time, and a merge that keeps the page
// whole puts steps back into the cpu's section of the trace.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "service/run_merge.h"

namespace udiag::service {

// An item of a run, as the overlap search sees it: a page spans
// [time, time + span_ns]; a record has no page.
struct TimedItem {
  static constexpr uint32_t kNoPage = UINT32_MAX;
  uint64_t time;
  uint16_t cpu;
  uint32_t page = kNoPage;  // index into `apart` below
  uint64_t span_ns = 0;
};

// Sets apart[page] for each page with an item of another run on its cpu
// within its span, and for that item too when it is a page. `item(i)` gives
// item i of `runs` (each run in time order); `apart` has a slot per page.
// Returns whether any was set. As a run's pages go forward in time, so does
// where each other run's items reach them: a cursor per other run, moved
// forward only (a binary search per page mispredicted most of its branches).
template <typename ItemAt>
bool MarkOverlappingPages(const std::vector<TimeRun>& runs, ItemAt&& item_at, std::vector<bool>& apart) {
  // Gathered once, side by side: every run is walked once per other run.
  size_t count = 0;
  for (const TimeRun& run : runs) count = std::max(count, run.end);
  std::vector<TimedItem> items(count);
  for (const TimeRun& run : runs) {
    for (size_t i = run.begin; i < run.end; ++i) items[i] = item_at(i);
  }
  std::vector<size_t> reached(runs.size());  // by other run: its first item at or after the page's start
  bool any = false;
  for (size_t r = 0; r < runs.size(); ++r) {
    for (size_t other = 0; other < runs.size(); ++other) reached[other] = runs[other].begin;
    for (size_t i = runs[r].begin; i < runs[r].end; ++i) {
      const TimedItem& page = items[i];
      if (page.page == TimedItem::kNoPage) continue;
      const uint64_t last = page.time + page.span_ns;
      for (size_t other = 0; other < runs.size(); ++other) {
        if (other == r) continue;
        size_t& from = reached[other];
        while (from < runs[other].end && items[from].time < page.time) ++from;
        for (size_t j = from; j < runs[other].end; ++j) {
          const TimedItem& near = items[j];
          if (near.time > last) break;
          if (near.cpu != page.cpu) continue;
          apart[page.page] = true;
          if (near.page != TimedItem::kNoPage) apart[near.page] = true;
          any = true;
          break;
        }
      }
    }
  }
  return any;
}

}  // namespace udiag::service
