// Turns a bpftrace program written for user_events tracepoints into one that
// bpftrace (0.17) runs against udiagd's USDT probe udiag:event
// (service/event_probe.h). A probe `user_events:NAME` (also
// `tracepoint:user_events:NAME`, `t:…`, and the user_events_multi system)
// becomes `<usdt> /arg0 == ID/`, and `args->field` a read of the payload at
// the field's offset and type from the event's `format`; `pid` and `tid` are
// the producer's, `probe` the string "tracepoint:SYSTEM:NAME". A NAME with
// `*`, `?` or `[` is a glob: one block per event it matches. Every other
// probe is copied untouched. See docs/bpf.md.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "record/trace_model.h"

namespace udiag::cli {

// The event `system:name` as its format describes it, or nullopt with the
// reason in `*error`.
using EventLookup = std::function<std::optional<record::EventType>(const std::string& system,
                                                                   const std::string& name, std::string* error)>;

// The names of the events of `system` that the fnmatch(3) glob `pattern`
// matches, in any order (none: an empty list), or nullopt with the reason in
// `*error`.
using EventGlob = std::function<std::optional<std::vector<std::string>>(
    const std::string& system, const std::string& pattern, std::string* error)>;

struct BpftraceTranslation {
  std::string program;              // for bpftrace
  std::vector<std::string> events;  // "system/name" of the events it probes, once each, in order
  std::string error;                // what is wrong with the source, a line each; empty when it translated
};

// `usdt` is the attach point of the probe, e.g. "usdt:/proc/42/exe:udiag:event".
BpftraceTranslation TranslateBpftrace(std::string_view source, std::string_view usdt, const EventLookup& lookup,
                                      const EventGlob& glob);

}  // namespace udiag::cli
