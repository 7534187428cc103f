#include "service/event_filters.h"

#include <cerrno>

#include "base/tsc.h"

namespace udiag::service {
namespace {

// The kernel strips trailing blanks from what was written (the newline of
// `echo`) and keeps leading ones; "0" alone, blanks aside, clears.
std::string_view Stripped(std::string_view text) {
  text = text.substr(0, text.find('\0'));
  size_t end = text.find_last_not_of(" \t\n\v\f\r");
  return end == std::string_view::npos ? std::string_view() : text.substr(0, end + 1);
}

bool IsClear(std::string_view stripped) {
  size_t start = stripped.find_first_not_of(" \t\n\v\f\r");
  return start != std::string_view::npos && stripped.substr(start) == "0";
}

}  // namespace

const EventFilters::State* EventFilters::Find(const Event& event) const {
  size_t slot = event.id - EventRegistry::kFirstId;
  if (slot >= states_.size() || !states_[slot] || states_[slot]->event_seq != event.created_seq) return nullptr;
  return states_[slot].get();
}

EventFilters::State& EventFilters::Slot(const Event& event) {
  size_t slot = event.id - EventRegistry::kFirstId;
  if (slot >= states_.size()) states_.resize(slot + 1);
  states_[slot] = std::make_unique<State>();
  states_[slot]->event_seq = event.created_seq;
  return *states_[slot];
}

bool EventFilters::Test(const State& state, const Event& event, const EntryMeta& meta,
                        std::span<const uint8_t> record, const CommLookup& comm) {
  if (!state.active || state.event_seq != event.created_seq) return true;
  std::string name;
  if (state.filter.needs_comm() && comm) name = comm(meta.tid);
  return state.filter.Matches({record, meta.cpu, name});
}

int EventFilters::Write(const Event& event, std::string_view text, ErrorLog* log) {
  if (text.size() > filter::kMaxFilterText) return EINVAL;
  std::string_view stripped = Stripped(text);
  if (IsClear(stripped)) {
    if (size_t slot = event.id - EventRegistry::kFirstId; slot < states_.size()) states_[slot].reset();
    return 0;
  }
  State& state = Slot(event);
  filter::ParseError error;
  int err = filter::Compile(stripped, event.desc.fields, &state.filter, &error);
  if (err) {
    state.text = filter::ErrorFileText(stripped, error);
    log->Add(filter::ErrorLogEntry(base::MonotonicNs(), stripped, error));
    return err;
  }
  state.text = std::string(stripped);
  state.active = true;
  return 0;
}

int EventFilters::WriteSystem(const std::vector<Event*>& events, std::string_view text, ErrorLog* log) {
  if (text.size() > filter::kMaxFilterText) return EINVAL;
  std::string_view stripped = Stripped(text);
  for (const Event* event : events) {
    if (IsClear(stripped)) {
      Write(*event, "0", log);
      continue;
    }
    State& state = Slot(*event);
    filter::ParseError error;
    if (filter::Compile(stripped, event->desc.fields, &state.filter, &error) == 0) {
      state.text = std::string(stripped);
      state.active = true;
      continue;
    }
    const filter::ParseError subsystem{filter::ErrorCode::kBadSubsysFilter, 0};
    state.text = filter::ErrorFileText(stripped, subsystem);
    log->Add(filter::ErrorLogEntry(base::MonotonicNs(), stripped, subsystem));
  }
  return 0;
}

std::string EventFilters::Read(const Event& event) const {
  const State* state = Find(event);
  return state ? state->text + "\n" : "none\n";
}

std::string SystemFilterText() {
  return "### global filter ###\n"
         "# Use this to set filters for multiple events.\n"
         "# Only events with the given fields will be affected.\n"
         "# If no events are modified, an error message will be displayed here\n";
}

}  // namespace udiag::service
