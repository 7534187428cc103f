// Writes a trace-cmd trace.dat file, version 6, uncompressed (formats.md §1):
// the event formats grouped by system, the tasks as saved cmdlines, one
// ring-buffer page stream per cpu, and the trace clock (TraceInfo::clock,
// "mono" for udiag) so `trace-cmd report` prints seconds and merges the file
// with kernel traces recorded with `-C mono`.
//
// Pages are spooled to one unlinked temporary file per cpu in the output's
// directory, because the cpu table precedes the data; Finish assembles the
// file. A record's lost_before marks its page the way ftrace does (missed
// events bit plus the stored count), so `trace-cmd report` prints the loss
// where it happened. A record too large for one page (over 4064 bytes) or
// shorter than the common header is dropped and counted as lost before the
// next record on its cpu (or at the end).
#pragma once

#include <memory>
#include <string>

#include "base/error_or.h"
#include "record/trace_model.h"

namespace udiag::record {

// Creates (truncates) `path` at once, so an unwritable path fails here with
// its errno; the content is written by Finish.
base::ErrorOr<std::unique_ptr<TraceWriter>> OpenTraceDatWriter(const std::string& path);

}  // namespace udiag::record
