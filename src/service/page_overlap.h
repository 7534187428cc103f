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
// Returns whether any was set. A binary search per page and other run.
template <typename ItemAt>
bool MarkOverlappingPages(const std::vector<TimeRun>& runs, ItemAt&& item, std::vector<bool>& apart) {
  bool any = false;
  for (size_t r = 0; r < runs.size(); ++r) {
    for (size_t i = runs[r].begin; i < runs[r].end; ++i) {
      const TimedItem page = item(i);
      if (page.page == TimedItem::kNoPage) continue;
      const uint64_t last = page.time + page.span_ns;
      for (size_t other = 0; other < runs.size(); ++other) {
        if (other == r) continue;
        // The first item of the other run at or after the page's start.
        size_t lo = runs[other].begin, hi = runs[other].end;
        while (lo < hi) {
          const size_t mid = lo + (hi - lo) / 2;
          if (item(mid).time < page.time) {
            lo = mid + 1;
          } else {
            hi = mid;
          }
        }
        for (size_t j = lo; j < runs[other].end; ++j) {
          const TimedItem near = item(j);
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
