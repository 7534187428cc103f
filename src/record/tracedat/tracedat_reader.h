// Reads a trace-cmd trace.dat file, version 6 (what OpenTraceDatWriter
// writes, and trace-cmd's own v6 files) or version 7 uncompressed (e.g.
// `trace-cmd convert --compression none`; compressed v7 gives EINVAL): event
// formats, saved cmdlines, the trace clock, and the top buffer's per-cpu
// pages, merged across cpus in timestamp order (ties: lower cpu first).
//
// The whole file is checked when opened, every page included, so a
// malformed file fails here with EINVAL and Next never meets one. A page
// flagged with missed events gives its first record lost_before (1 when the
// count was not stored); losses flagged on trailing empty pages and udiag's
// lost-at-end option become TraceInfo::lost_at_end. Record data comes back
// padded to 4 bytes, as the ring buffer stores it. Tasks are the saved
// cmdlines (tid, comm); the process id comes from udiag's task option, else
// it is the tid. The file is mapped: it must not shrink while the reader is
// open.
#pragma once

#include <memory>
#include <string>

#include "base/error_or.h"
#include "record/trace_model.h"

namespace udiag::record {

base::ErrorOr<std::unique_ptr<TraceReader>> OpenTraceDatReader(const std::string& path);

}  // namespace udiag::record
