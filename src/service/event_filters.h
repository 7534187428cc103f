// One instance's event filters: the `filter` files of events/<system>/<event>
// and events/<system>, as the kernel keeps them per trace instance. Records
// are tested as the daemon takes them in, before they are copied into the
// instance's buffer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "filter/filter.h"
#include "service/error_log.h"
#include "service/event_registry.h"
#include "service/trace_buffer.h"

namespace udiag::service {

// Names the thread behind a record (COMM in filters).
using CommLookup = std::function<std::string(uint32_t tid)>;

class EventFilters {
 public:
  // A write to events/<system>/<event>/filter: "0" clears; otherwise the
  // filter replaces the old one, or on a parse error the file shows the
  // error, the event is unfiltered and `log` gets an entry. Returns 0 or the
  // kernel's errno for the error (EINVAL mostly).
  int Write(const Event& event, std::string_view text, ErrorLog* log);
  // A write to events/<system>/filter for `events` (those of the system):
  // each event takes the filter if it parses for its fields, else shows the
  // subsystem error. Returns 0 (the kernel fails only for a system without events).
  int WriteSystem(const std::vector<Event*>& events, std::string_view text, ErrorLog* log);
  // What events/<system>/<event>/filter reads: "none\n" or the filter's text.
  std::string Read(const Event& event) const;

  // Whether `event` has a filter (set, parsed or not).
  bool Has(const Event& event) const {
    size_t slot = event.id - EventRegistry::kFirstId;
    return slot < states_.size() && states_[slot];
  }
  // Whether `record` of `event` passes its filter (no filter: yes).
  bool Accepts(const Event& event, const EntryMeta& meta, std::span<const uint8_t> record,
               const CommLookup& comm) const {
    size_t slot = event.id - EventRegistry::kFirstId;
    if (slot >= states_.size() || !states_[slot]) return true;
    return Test(*states_[slot], event, meta, record, comm);
  }

 private:
  struct State {
    uint64_t event_seq = 0;  // the event it was set for (ids are reused)
    std::string text;        // what the file shows (without the final newline)
    bool active = false;     // parsed: records are tested
    filter::Filter filter;
  };
  static bool Test(const State& state, const Event& event, const EntryMeta& meta, std::span<const uint8_t> record,
                   const CommLookup& comm);
  const State* Find(const Event& event) const;
  State& Slot(const Event& event);
  std::vector<std::unique_ptr<State>> states_;  // by event id - kFirstId
};

// What events/<system>/filter reads: the kernel shows this whatever was written.
std::string SystemFilterText();

}  // namespace udiag::service
