// §11.1/§11.2: classifies one line written to dynamic_events.

#include "schema/event_description.h"

#include <algorithm>
#include <cerrno>

#include "schema/ascii_text.h"

namespace udiag::schema {
namespace {

constexpr std::string_view kUserEventsPrefix = "u:";

// "-:[system/]name [fields]" or "!<anything>:[system/]name [fields]".
int ParseDelete(std::string_view text, DynamicEventsCommand* out) {
  auto head_end = std::find_if(text.begin(), text.end(), IsSpace);
  std::string_view head(text.begin(), head_end);
  std::string_view target;
  if (head.starts_with('-')) {
    if (!head.starts_with("-:")) return EINVAL;
    target = head.substr(2);
  } else {
    size_t colon = head.find(':');
    if (colon == std::string_view::npos) return EINVAL;
    target = head.substr(colon + 1);
  }
  DynamicEventsCommand command;
  command.op = DynamicEventsCommand::Op::kDelete;
  if (size_t slash = target.find('/'); slash != std::string_view::npos) {
    command.system = target.substr(0, slash);
    // An empty system could not be told apart from none given; it matches nothing anyway.
    if (command.system.empty()) return EINVAL;
    target.remove_prefix(slash + 1);
  }
  if (target.empty()) return EINVAL;
  command.name = target;
  command.args = TrimSpace(std::string_view(head_end, text.end()));
  *out = std::move(command);
  return 0;
}

}  // namespace

int ParseDynamicEventsLine(std::string_view line, DynamicEventsCommand* out) {
  // As in the kernel, a '#' anywhere starts a comment.
  std::string_view text = TrimSpace(line.substr(0, line.find('#')));
  if (text.starts_with('-') || text.starts_with('!')) return ParseDelete(text, out);
  DynamicEventsCommand command;
  if (text.starts_with(kUserEventsPrefix)) {
    command.op = DynamicEventsCommand::Op::kCreate;
    command.command = TrimLeadingSpace(text.substr(kUserEventsPrefix.size()));
  } else if (!text.empty()) {
    command.op = DynamicEventsCommand::Op::kForeign;
  }
  *out = std::move(command);
  return 0;
}

}  // namespace udiag::schema
