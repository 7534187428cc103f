// The kernel's filter parse errors: their messages, where they point, and the
// texts the `filter` file and `error_log` show for them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace udiag::filter {

// In the kernel's order (err_text[] of trace_events_filter.c).
enum class ErrorCode : uint8_t {
  kNone, kInvalidOp, kTooManyOpen, kTooManyClose, kMissingQuote, kMissingBraceOpen,
  kMissingBraceClose, kOperandTooLong, kExpectString, kExpectDigit, kIllegalFieldOp,
  kFieldNotFound, kIllegalIntval, kBadSubsysFilter, kTooManyPreds, kInvalidFilter,
  kInvalidCpulist, kIpFieldOnly, kInvalidValue, kNoFunction, kErrno, kNoFilter,
};

std::string_view ErrorText(ErrorCode code);

struct ParseError {
  ErrorCode code = ErrorCode::kNone;  // kNone: the kernel sets no message ("Error: (0)")
  uint32_t pos = 0;                   // where the caret points, as the kernel counts it
};

// What reading `filter` shows after a failed write of `text`, without the
// final newline the read adds: "text\n<caret>\nparse_error: <msg>\n".
std::string ErrorFileText(std::string_view text, const ParseError& error);

// One `error_log` entry as the kernel's tracing_log_err() lays it out:
// "[  sec.usec] <location>: error: <message>\n  Command: <command>\n", then a
// caret under character `pos` of the command.
std::string TracingLogEntry(uint64_t timestamp_ns, std::string_view location, std::string_view message,
                            std::string_view command, size_t pos);

// One `error_log` entry: "[  sec.usec] event filter parse error: error: <msg>\n
//   Command: <text>\n<caret>\n". `timestamp_ns` is the entry's time.
std::string ErrorLogEntry(uint64_t timestamp_ns, std::string_view text, const ParseError& error);

}  // namespace udiag::filter
