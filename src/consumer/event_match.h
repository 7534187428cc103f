// Picking events by name the way users write them on the command line:
// "name", "system:name", or globs of either ("count_*", "user_events:*").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace udiag::consumer {

struct EventName {
  std::string system;
  std::string name;  // the tracepoint name, as in events/<system>/<name>/
  bool operator==(const EventName&) const = default;
};

// The events of an `available_events` listing ("system:name" lines) that
// `pattern` selects, with the daemon's auto-enable rule: a pattern with a
// colon is matched against "system:name", one without against the name
// alone, as fnmatch(3) globs.
std::vector<EventName> MatchEvents(std::string_view available_events, const std::string& pattern);

// "events/<system>/<name>/enable".
std::string EnablePath(const EventName& event);

}  // namespace udiag::consumer
