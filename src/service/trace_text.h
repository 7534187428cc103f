// The ftrace text forms of the `trace` and `trace_pipe` files (spec §13.4):
// the header, one line per record, and the lost-events line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "service/trace_buffer.h"

namespace udiag::service {

struct Event;

// "# tracer: nop" ... column legend, as the kernel prints it for `trace`.
std::string TraceFileHeader(uint64_t entries, uint64_t written, int online_cpus);

// "CPU:N [LOST M EVENTS]\n"
std::string LostEventsLine(int cpu, uint64_t lost);

// "<comm>-<tid> [cpu] ..... secs.usecs: <tp>: field=value ...\n". `event` is
// null for a record whose event is gone ("Unknown type N").
std::string TraceLine(const TraceEntry& entry, std::string_view comm, const Event* event);

}  // namespace udiag::service
