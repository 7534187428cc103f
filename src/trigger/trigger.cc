#include "trigger/trigger.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>

#include "filter/kernel_number.h"

namespace udiag::trigger {
namespace {

struct CommandName {
  std::string_view name;
  Command command;
};
constexpr CommandName kCommands[] = {
    {"traceon", Command::kTraceOn},         {"traceoff", Command::kTraceOff},
    {"snapshot", Command::kSnapshot},       {"stacktrace", Command::kStacktrace},
    {"enable_event", Command::kEnableEvent}, {"disable_event", Command::kDisableEvent},
    {"enable_hist", Command::kEnableHist},   {"disable_hist", Command::kDisableHist},
    {"hist", Command::kHist},
};

std::string_view NameOf(Command command) {
  for (const auto& c : kCommands) {
    if (c.command == command) return c.name;
  }
  return {};
}

std::string_view SkipBlanks(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return s;
}

// strsep(&s, delims): the text before the first delimiter; `s` keeps what
// follows it, or becomes null (has_rest false) when there was none.
std::string_view Sep(std::string_view* s, bool* has_rest, std::string_view delims) {
  size_t at = s->find_first_of(delims);
  std::string_view head = s->substr(0, at);
  *has_rest = at != std::string_view::npos;
  *s = *has_rest ? s->substr(at + 1) : std::string_view();
  return head;
}

// ":N" as the kernel's event_trigger_parse_num: the text up to the next ':',
// read with kstrtoul base 0.
int ParseCount(std::string_view param, uint64_t* count) {
  bool more = false;
  std::string_view number = Sep(&param, &more, ":");
  if (number.empty()) return EINVAL;
  auto value = filter::KernelStrToU64(number);
  if (!value) return EINVAL;
  *count = *value;
  return 0;
}

// "if <filter>": the kernel's set_trigger_filter takes the rest verbatim.
int ParseFilter(std::string_view text, std::string* filter) {
  bool more = false;
  std::string_view word = Sep(&text, &more, " \t");
  if (word != "if" || !more) return EINVAL;
  *filter = std::string(text);
  return 0;
}

// Splits "param [if filter]" when a parameter is present (`required`), or
// when the text starts with a digit (the optional :N of the simple commands).
void SeparateFilter(std::string_view text, bool required, std::string_view* param, std::string_view* filter,
                    bool* has_param, bool* has_filter) {
  *has_param = *has_filter = false;
  if (text.empty()) return;
  if (!required && !std::isdigit(static_cast<unsigned char>(text.front()))) {
    *filter = text;
    *has_filter = true;
    return;
  }
  bool more = false;
  *param = Sep(&text, &more, " \t");
  *has_param = true;
  if (more) {
    *filter = SkipBlanks(text);
    *has_filter = !filter->empty();
  }
}

}  // namespace

bool TargetsEvent(Command command) {
  return command == Command::kEnableEvent || command == Command::kDisableEvent || command == Command::kEnableHist ||
         command == Command::kDisableHist;
}

int Parse(std::string_view text, Spec* out) {
  *out = Spec{};
  bool more = false;
  std::string_view name = Sep(&text, &more, ": \t");
  text = SkipBlanks(text);
  if (!name.empty() && name.front() == '!') {
    out->remove = true;
    name.remove_prefix(1);
  }
  bool known = false;
  for (const auto& c : kCommands) {
    if (c.name == name) {
      out->command = c.command;
      known = true;
    }
  }
  if (!known) return EINVAL;

  const bool targets = TargetsEvent(out->command);
  std::string_view param, filter;
  bool has_param = false, has_filter = false;
  SeparateFilter(text, targets || out->command == Command::kHist, &param, &filter, &has_param, &has_filter);
  if (out->command == Command::kHist) {
    // A histogram is named by all of it, filter included, also to remove it.
    if (!has_param) return EINVAL;
    out->param = std::string(param);
    return has_filter ? ParseFilter(filter, &out->filter) : 0;
  }
  if (targets) {
    if (!has_param) return EINVAL;
    std::string_view system = Sep(&param, &more, ":");
    if (!more) return EINVAL;
    std::string_view event = Sep(&param, &more, ":");
    out->system = std::string(system);
    out->event = std::string(event);
    has_param = more;  // what follows sys:ev: is the count
  }
  if (out->remove) return 0;
  if (has_param) {
    if (int err = ParseCount(param, &out->count)) return err;
  }
  if (has_filter) return ParseFilter(filter, &out->filter);
  return 0;
}

bool SameKind(const Spec& a, const Spec& b) {
  auto kind = [](Command c) {
    switch (c) {
      case Command::kTraceOff: return Command::kTraceOn;
      case Command::kDisableEvent: return Command::kEnableEvent;
      case Command::kDisableHist: return Command::kEnableHist;
      default: return c;
    }
  };
  if (kind(a.command) != kind(b.command)) return false;
  if (!TargetsEvent(a.command)) return true;
  return a.system == b.system && a.event == b.event;
}

std::string ListingLine(const Spec& spec, uint64_t count) {
  std::string out(NameOf(spec.command));
  if (TargetsEvent(spec.command)) {
    out += fmt::format(":{}:{}", spec.system, spec.event);
  }
  out += count == kUnlimited ? std::string(":unlimited") : fmt::format(":count={}", count);
  if (!spec.filter.empty()) out += " if " + spec.filter;
  return out + "\n";
}

std::string_view AvailableTriggers() {
  return "# Available triggers:\n"
         "# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist\n";
}

}  // namespace udiag::trigger
