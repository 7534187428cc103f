// ftrace event triggers (the `trigger` files): the kernel's command grammar,
// `cmd[:N] [if filter]` and `!cmd`, and the lines the file lists them with
// (kernel/trace/trace_events_trigger.c, v6.x; events.rst §6).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace udiag::trigger {

enum class Command : uint8_t {
  kTraceOn, kTraceOff, kSnapshot, kStacktrace, kEnableEvent, kDisableEvent, kEnableHist, kDisableHist, kHist,
};

// enable_event, disable_event, enable_hist, disable_hist: SYS:EV name another event.
bool TargetsEvent(Command command);

// A count of -1 in the kernel: the trigger acts every time.
inline constexpr uint64_t kUnlimited = UINT64_MAX;

struct Spec {
  Command command = Command::kTraceOn;
  bool remove = false;      // "!cmd": count and filter are ignored, as the kernel does (hist aside)
  std::string system;       // TargetsEvent(): the target event
  std::string event;
  uint64_t count = kUnlimited;
  std::string filter;       // the text after "if ", or empty
  std::string param;        // hist: "keys=...:vals=..." (trigger/hist.h parses it)
};

// Parses one command (the caller strips trailing blanks). Returns 0 or
// EINVAL, as the kernel's parse does before it looks at the event.
int Parse(std::string_view text, Spec* out);

// Whether two triggers occupy the same place on an event (adding the second
// is EEXIST, `!` of one removes the other): the kernel's trigger_type, so
// traceon and traceoff share one, enable_event/disable_event one per target,
// and enable_hist/disable_hist another per target.
bool SameKind(const Spec& a, const Spec& b);

// The line reading `trigger` shows for a trigger with `count` left.
std::string ListingLine(const Spec& spec, uint64_t count);

// What reading an empty `trigger` file shows.
std::string_view AvailableTriggers();

}  // namespace udiag::trigger
