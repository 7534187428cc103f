// Synthetic events (histogram.rst §2.2.2): the `synthetic_events` file's
// definitions ("wakeup_latency u64 lat; pid_t pid"), the records a hist
// action generates for them, and their texts, which differ from a user
// event's: every field takes an 8-byte slot, and trace lines print
// "lat=5 pid=1234" (kernel/trace/trace_events_synth.c, v6.x).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schema/event_description.h"

namespace udiag::trigger {

// Parses a definition: a name, then "type name" fields separated by ';'.
// Numeric types only (docs/compat.md). Returns 0 or EINVAL.
int ParseSynthEvent(std::string_view text, schema::EventDescription* out);

// The line reading `synthetic_events` shows: "name\tu64 lat; pid_t pid\n".
std::string SynthEventLine(const schema::EventDescription& event);

// The format file's print fmt: "\"lat=%llu, pid=%d\", REC->lat, REC->pid".
std::string SynthPrintFmt(const std::vector<schema::Field>& fields);

// The text after "name: " in a trace line: "lat=5 pid=1234".
std::string RenderSynthFields(const std::vector<schema::Field>& fields, std::span<const uint8_t> record);

// A record of event `id` with these field values, written by `pid`.
std::vector<uint8_t> SynthRecord(uint16_t id, int32_t pid, const std::vector<schema::Field>& fields,
                                 std::span<const uint64_t> values);

}  // namespace udiag::trigger
