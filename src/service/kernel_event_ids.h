// The ids the running kernel gives its own trace events. udiag's event ids
// must avoid them: a perf_event_open(PERF_TYPE_TRACEPOINT) on an id the
// preload does not intercept reaches the kernel, and must not attach to some
// unrelated kernel tracepoint.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace udiag::service {

// The kernel's tracefs, if one is mounted at /sys/kernel/tracing or
// /sys/kernel/debug/tracing (checked by file system type, so that udiag's
// own FUSE view is never taken for it); empty otherwise.
std::string RealTracefsRoot();

// Every `events/<system>/<event>/id` under `root`, unsorted.
std::vector<uint32_t> TracepointIdsUnder(const std::string& root);

}  // namespace udiag::service
