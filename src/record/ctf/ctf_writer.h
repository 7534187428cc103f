// CTF 1.8 trace writer: `udiag record --format ctf -o DIR`.
//
// DIR gets a plain-text TSDL `metadata` file and one data stream file per
// CPU (`stream_<cpu>`), readable by babeltrace2, python3-bt2 and Trace
// Compass:
//   - clock "monotonic" in ns; timestamps stay CLOCK_MONOTONIC values and the
//     clock's offset (REALTIME - MONOTONIC when the writer opened) makes
//     readers show wall-clock times;
//   - one event class "<system>:<name>" per EventType, its id the type id,
//     its fields typed from the schema fields (see CtfFieldKind), with the
//     context pid, tid, common_flags and common_preempt_count;
//   - packets of up to ~64 KiB with timestamp_begin/end, content/packet
//     size, cpu_id and a running events_discarded: Record::lost_before opens
//     a new packet that counts them, TraceInfo::lost_at_end ends stream 0
//     with an empty packet that counts them, so readers report the losses;
//   - env: hostname, tracer_name "udiag", trace_clock, cpus, comm_<tid>;
//   - exact kernel field types and task names in a comment ctf_reader.h uses.
// The metadata is (re)written before the first event of each new type and
// at every checkpoint, and the open packets are written at checkpoints: a
// recording killed at any moment leaves a valid trace of all but its last
// packets (and, rarely, one torn packet, which `udiag recover` cuts off).
#pragma once

#include <memory>
#include <string>

#include "base/error_or.h"
#include "record/trace_model.h"

namespace udiag::record::ctf {

// Creates DIR (an existing empty directory is fine, a non-empty one is
// EEXIST). Returns the writer or an errno from mkdir/open.
base::ErrorOr<std::unique_ptr<TraceWriter>> OpenCtfWriter(const std::string& dir);

}  // namespace udiag::record::ctf
