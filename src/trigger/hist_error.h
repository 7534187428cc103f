// The kernel's hist trigger errors that udiag reports (err_text[] of
// trace_events_hist.c, v6.x), and the `error_log` entry of one, as the
// kernel's hist_err() writes it: the command, and a caret under the text the
// error is about.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace udiag::trigger {

enum class HistErrorCode : uint8_t {
  kNone,
  kDuplicateVar,
  kVarNotUnique,
  kTooManyVars,
  kMalformedAssignment,
  kTriggerEexist,
  kTriggerEnoentClear,
  kBadFieldModifier,
  kEventFileNotFound,
  kSynthEventNotFound,
  kSynthCountMismatch,
  kOnxNotVar,
  kNoSaveParams,
  kActionMismatch,
  kNoClosingParen,
  kSubsysNotFound,
  kInvalidRefKey,
  kVarNotFound,
  kFieldNotFound,
  kInvalidSortModifier,
  kEmptySortField,
  kTooManySortFields,
  kInvalidSortField,
  kExpectNumber,
  kNamedMismatch,
  kTooManySubexpr,
};

std::string_view HistErrorText(HistErrorCode code);

// A parse error: what, and the text the caret goes under (its first place in
// the command, as the kernel's errpos(); empty: the start).
struct HistError {
  HistErrorCode code = HistErrorCode::kNone;
  std::string token;
};

// Records the first error into `error` (when given) and returns EINVAL.
int HistFail(HistError* error, HistErrorCode code, std::string_view token);

// "[  sec.usec] hist:SYS:EV: error: <msg>\n  Command: <command>\n<caret>\n".
// `command` is "hist:" and what followed it in the write.
std::string HistErrorLogEntry(uint64_t timestamp_ns, std::string_view system, std::string_view event,
                              std::string_view command, const HistError& error);

}  // namespace udiag::trigger
