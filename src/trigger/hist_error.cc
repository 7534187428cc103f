#include "trigger/hist_error.h"

#include <fmt/format.h>

#include <array>
#include <cerrno>

#include "filter/filter_error.h"

namespace udiag::trigger {
namespace {

constexpr std::array<std::string_view, 26> kTexts = {
    "No error",
    "Variable already defined",
    "Variable name not unique, need to use fully qualified name (subsys.event.var) for variable",
    "Too many variables defined",
    "Malformed assignment",
    "Hist trigger already exists",
    "Can't clear or continue a nonexistent hist trigger",
    "Invalid field modifier",
    "Event file not found",
    "Couldn't find synthetic event",
    "Param count doesn't match synthetic event field count",
    "For onmax(x) or onchange(x), x must be a variable",
    "No params found for save()",
    "Handler doesn't support action",
    "No closing paren found",
    "Missing subsystem",
    "Using variable references in keys not supported",
    "Couldn't find variable",
    "Couldn't find field",
    "Invalid sort modifier",
    "Empty sort field",
    "Too many sort fields (Max = 2)",
    "Sort field must be a key or a val",
    "Expecting numeric literal",
    "Named hist trigger doesn't match existing named trigger (includes variables)",
    "Too many subexpressions (3 max)",
};

}  // namespace

std::string_view HistErrorText(HistErrorCode code) { return kTexts[static_cast<size_t>(code)]; }

int HistFail(HistError* error, HistErrorCode code, std::string_view token) {
  if (error && error->code == HistErrorCode::kNone) *error = {code, std::string(token)};
  return EINVAL;
}

std::string HistErrorLogEntry(uint64_t timestamp_ns, std::string_view system, std::string_view event,
                              std::string_view command, const HistError& error) {
  size_t pos = error.token.empty() ? 0 : command.find(error.token);
  if (pos == std::string_view::npos) pos = 0;
  return filter::TracingLogEntry(timestamp_ns, fmt::format("hist:{}:{}", system, event),
                                 HistErrorText(error.code), command, pos);
}

}  // namespace udiag::trigger
