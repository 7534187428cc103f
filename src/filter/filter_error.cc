#include "filter/filter_error.h"

#include <fmt/format.h>

#include <array>

namespace udiag::filter {
namespace {

constexpr std::array<std::string_view, 22> kTexts = {
    "No error",
    "Invalid operator",
    "Too many '('",
    "Too few '('",
    "Missing matching quote",
    "Missing '{'",
    "Missing '}'",
    "Operand too long",
    "Expecting string field",
    "Expecting numeric field",
    "Illegal operation for field type",
    "Field not found",
    "Illegal integer value",
    "Couldn't find or set field in one of a subsystem's events",
    "Too many terms in predicate expression",
    "Meaningless filter expression",
    "Invalid cpulist",
    "Only 'ip' field is supported for function trace",
    "Invalid value (did you forget quotes)?",
    "Function not found",
    "Error",
    "No filter found",
};

constexpr std::string_view kCommandPrefix = "  Command: ";

}  // namespace

std::string_view ErrorText(ErrorCode code) { return kTexts[static_cast<size_t>(code)]; }

std::string ErrorFileText(std::string_view text, const ParseError& error) {
  if (error.code == ErrorCode::kNone) return fmt::format("{}\nError: (0)\n", text);
  // The caret goes under character `pos`, never past the end of the text.
  size_t pos = std::min<size_t>(error.pos, text.size());
  return fmt::format("{}\n{}^\nparse_error: {}\n", text, std::string(pos, ' '), ErrorText(error.code));
}

std::string TracingLogEntry(uint64_t timestamp_ns, std::string_view location, std::string_view message,
                            std::string_view command, size_t pos) {
  return fmt::format("[{:5}.{:06}] {}: error: {}\n{}{}\n{}^\n", timestamp_ns / 1'000'000'000,
                     timestamp_ns % 1'000'000'000 / 1000, location, message, kCommandPrefix, command,
                     std::string(kCommandPrefix.size() + pos, ' '));
}

std::string ErrorLogEntry(uint64_t timestamp_ns, std::string_view text, const ParseError& error) {
  // Without a message the kernel logs "Error" at the start of the command.
  ErrorCode code = error.code == ErrorCode::kNone ? ErrorCode::kErrno : error.code;
  uint32_t pos = error.code == ErrorCode::kNone ? 0 : error.pos;
  return TracingLogEntry(timestamp_ns, "event filter parse error", ErrorText(code), text, pos);
}

}  // namespace udiag::filter
