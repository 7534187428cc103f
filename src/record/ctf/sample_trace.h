// A fixed trace for the CTF tests: every field type of user_events.md §4.2,
// a multi-format event, an event without fields, field names TSDL cannot
// take as they are, three tasks on two of three CPUs, and losses before a
// CPU's first record, in the middle and at the end. The golden text and the
// python3-bt2 check in testdata/ describe exactly this trace.
#pragma once

#include <cstdint>
#include <vector>

#include "record/trace_model.h"

namespace udiag::record::ctf {

struct StoredRecord {
  Record record;  // data points into bytes
  std::vector<uint8_t> bytes;
};

struct SampleTrace {
  TraceInfo info;
  std::vector<EventType> types;
  std::vector<Task> tasks;
  std::vector<StoredRecord> records;
};

SampleTrace MakeSampleTrace();

// The sample's records repeated kLargeTraceRecords times over CPUs 1 and 2
// (many packets per stream; CPU 0 idle but for the losses at the end), with
// one event lost before kLargeTraceLosses of them.
inline constexpr int kLargeTraceRecords = 20000;
inline constexpr int kLargeTraceLosses = 20;
SampleTrace MakeLargeTrace();

// Feeds `trace` to `writer` in the TraceWriter call order and returns Finish().
int WriteSampleTrace(const SampleTrace& trace, TraceWriter* writer);

}  // namespace udiag::record::ctf
