#include "consumer/event_match.h"

#include <fnmatch.h>

namespace udiag::consumer {

std::vector<EventName> MatchEvents(std::string_view available_events, const std::string& pattern) {
  bool with_system = pattern.find(':') != std::string::npos;
  std::vector<EventName> matches;
  while (!available_events.empty()) {
    size_t end = available_events.find('\n');
    std::string line(available_events.substr(0, end));
    available_events.remove_prefix(end == std::string_view::npos ? available_events.size() : end + 1);
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    EventName event{line.substr(0, colon), line.substr(colon + 1)};
    const std::string& subject = with_system ? line : event.name;
    if (fnmatch(pattern.c_str(), subject.c_str(), 0) == 0) matches.push_back(std::move(event));
  }
  return matches;
}

std::string EnablePath(const EventName& event) {
  return "events/" + event.system + "/" + event.name + "/enable";
}

}  // namespace udiag::consumer
