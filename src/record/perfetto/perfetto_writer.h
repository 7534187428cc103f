// Perfetto protobuf trace writer: `udiag record -o FILE.pftrace`, for
// ui.perfetto.dev and trace_processor (spec/formats.md §4.2).
//
// The file is a perfetto.protos.Trace: a stream of TracePackets, valid at
// every packet boundary (it is appended to as records come, so a cut-short
// file still opens). The trace's own packets are on packet sequence 1, and
// each cpu's events on a sequence of their own (2 + cpu), in time order
// within it, as the pages of a cpu come; trace_processor orders the packets
// of all sequences by time, as it does for the writers of a Perfetto trace.
//   - first a ClockSnapshot (MONOTONIC and BOOTTIME sampled together,
//     primary_trace_clock MONOTONIC); every later packet is stamped with
//     timestamp_clock_id 3 (CLOCK_MONOTONIC), the clock of Record::timestamp;
//   - a cpu's sequence starts with a packet that says so
//     (first_packet_on_sequence, sequence_flags INCREMENTAL_STATE_CLEARED);
//   - before a thread's first event, a process TrackDescriptor (uuid
//     kProcessTrackBase + pid, process_name = comm of the thread whose tid is
//     the pid) and a thread TrackDescriptor (uuid kThreadTrackBase + tid, its
//     comm as thread_name); re-emitted when AddTask brings a name later;
//   - one TrackEvent TYPE_INSTANT per record on its thread track: category =
//     EventType::system, name = the tracepoint name or, for an EventHeader
//     event, its decoded event name; every field a typed debug annotation
//     (see debug_annotation.h), EventHeader attributes in a "meta" dict;
//   - a record with lost_before > 0 (lost on its cpu, just before it) sets
//     previous_packet_dropped = 1 and carries a "lost_events_before"
//     annotation with the count; losses at the end become a final instant
//     "lost events" (category "udiag", at the latest time written) with a
//     "lost_events" annotation.
// Perfetto files cannot be read back into the model (see trace_files.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/error_or.h"
#include "record/trace_model.h"

namespace udiag::record {

inline constexpr uint64_t kProcessTrackBase = uint64_t{1} << 32;
inline constexpr uint64_t kThreadTrackBase = uint64_t{2} << 32;

// CLOCK_MONOTONIC and CLOCK_BOOTTIME read at (nearly) the same moment.
struct ClockSample {
  uint64_t monotonic_ns = 0;
  uint64_t boottime_ns = 0;
};
ClockSample SampleClocks();

// Creates or truncates `path`. Returns the writer or the errno of open().
base::ErrorOr<std::unique_ptr<TraceWriter>> OpenPerfettoWriter(const std::string& path);
// The same with a given clock snapshot (tests use fixed values).
base::ErrorOr<std::unique_ptr<TraceWriter>> OpenPerfettoWriter(const std::string& path,
                                                               const ClockSample& clocks);

}  // namespace udiag::record
