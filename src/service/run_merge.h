// Merging runs that are each in time order already (a producer ring's
// records, one thread on one clock) into one time order, or into one time
// order per cpu.
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

// A run's stretch of records on one key (a thread's records on one cpu).
struct KeyedRun {
  uint32_t key;
  TimeRun run;
};

// Like MergeRunsInTimeOrder, but only the records of one key (`key(i)`) are
// put in time order among themselves, a key's records all visited before
// the next key's. Two threads running at once on two cpus interleave record
// by record in time, which costs a heap operation per record in one time
// order; on one cpu they take turns, so a run goes on for a whole time
// slice. `stretches` and `merged` are scratch space. Empties `runs`.
template <typename Key, typename Time, typename Visit>
void MergeRunsInTimeOrderPerKey(std::vector<TimeRun>& runs, std::vector<KeyedRun>& stretches,
                                std::vector<TimeRun>& merged, Key&& key, Time&& time, Visit&& visit) {
  stretches.clear();
  for (const TimeRun& run : runs) {
    for (size_t begin = run.begin, i = run.begin; i < run.end; begin = i) {
      const uint32_t k = key(i);
      while (++i < run.end && key(i) == k) {
      }
      stretches.push_back({k, {begin, i}});
    }
  }
  runs.clear();
  std::stable_sort(stretches.begin(), stretches.end(),
                   [](const KeyedRun& a, const KeyedRun& b) { return a.key < b.key; });
  for (size_t first = 0; first < stretches.size();) {
    merged.clear();
    size_t next = first;
    for (; next < stretches.size() && stretches[next].key == stretches[first].key; ++next) {
      merged.push_back(stretches[next].run);
    }
    MergeRunsInTimeOrder(merged, time, visit);
    first = next;
  }
}

}  // namespace udiag::service
