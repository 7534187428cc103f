// The plain-text `metadata` file of a trace: TSDL declaring the layout of
// ctf_layout.h for every event type, then the model comment.
#pragma once

#include <cstdint>
#include <string>

#include "record/ctf/model_comment.h"

namespace udiag::record::ctf {

// `clock_offset_ns` is CLOCK_REALTIME - CLOCK_MONOTONIC: readers add it to
// the monotonic timestamps to show wall-clock times.
std::string MetadataText(const TraceModel& model, int64_t clock_offset_ns);

}  // namespace udiag::record::ctf
