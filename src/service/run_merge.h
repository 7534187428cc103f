// Merging runs that are each in time order already (a producer ring's
// records, one thread on one clock) into one time order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace udiag::service {

// A run: the records [begin, end) of some array, in time order.
struct TimeRun {
  size_t begin;
  size_t end;
};

// Calls visit(i) for every record of `runs` in time order, `time(i)` giving
// record i's time; records of equal time may come in any order. Empties
// `runs`. Threads write in bursts, so a run goes on with no heap work up to
// the earliest head of the others: a heap operation per switch between
// runs, not per record.
template <typename Time, typename Visit>
void MergeRunsInTimeOrder(std::vector<TimeRun>& runs, Time&& time, Visit&& visit) {
  auto later = [&](const TimeRun& a, const TimeRun& b) { return time(a.begin) > time(b.begin); };
  std::erase_if(runs, [](const TimeRun& run) { return run.begin == run.end; });
  std::make_heap(runs.begin(), runs.end(), later);
  while (!runs.empty()) {
    std::pop_heap(runs.begin(), runs.end(), later);
    TimeRun& run = runs.back();
    const uint64_t others = runs.size() > 1 ? time(runs.front().begin) : UINT64_MAX;
    do {
      visit(run.begin++);
    } while (run.begin != run.end && time(run.begin) <= others);
    if (run.begin == run.end) {
      runs.pop_back();
    } else {
      std::push_heap(runs.begin(), runs.end(), later);
    }
  }
}

}  // namespace udiag::service
