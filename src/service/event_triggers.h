// One instance's event triggers: the `trigger` files of events/<system>/<event>,
// as the kernel keeps them per trace instance. They fire as the daemon takes
// records in, before the record's filter and its copy into the buffer, and
// act on their own instance (tracing_on, snapshot, enabling events).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "filter/filter.h"
#include "service/event_filters.h"
#include "service/event_registry.h"
#include "service/trace_buffer.h"
#include "trigger/hist.h"
#include "trigger/trigger.h"

namespace udiag::service {

class Instance;
class InstanceSet;

class EventTriggers {
 public:
  // A write to events/<system>/<event>/trigger of `instance`: one command,
  // or "!command" to remove one. Returns 0, EINVAL (bad command, filter or
  // target event), EEXIST (that kind of trigger, or that histogram, is there
  // already), ENOENT (hist :cont or :clear of no such histogram) or EBUSY
  // (removing a histogram whose variables another one reads).
  // Removing a trigger that is not there succeeds, as in the kernel. A
  // truncating write (`append` false) first removes the event's histograms
  // (but those another one reads), as opening the kernel's file with O_TRUNC does.
  int Write(InstanceSet& set, Instance& instance, Event& event, std::string_view text, bool append,
            EventRegistry& registry);
  // What the file reads: the triggers, newest first, then the histograms in
  // the order they were made; or the available commands.
  std::string Read(const Event& event) const;
  // What events/<system>/<event>/hist reads: each histogram's table.
  std::string ReadHist(const Event& event) const;
  // Removes every trigger (the instance goes away).
  void Clear(InstanceSet& set, Instance& instance);

  bool Has(const Event& event) const {
    size_t slot = event.id - EventRegistry::kFirstId;
    return slot < slots_.size() && (!slots_[slot].triggers.empty() || !slots_[slot].hists.empty());
  }
  // Whether any event has a trigger or histogram here.
  bool Any() const {
    return std::any_of(slots_.begin(), slots_.end(),
                       [](const Slot& s) { return !s.triggers.empty() || !s.hists.empty(); });
  }
  // Runs the event's triggers for one record (Has() first: this is the slow path).
  // Synthetic events that hist actions generate are delivered through `set`.
  void Fire(InstanceSet& set, Instance& instance, const Event& event, const EntryMeta& meta,
            std::span<const uint8_t> record, const CommLookup& comm);

 private:
  struct Trigger {
    trigger::Spec spec;
    uint64_t count = trigger::kUnlimited;  // acts left, or kUnlimited
    filter::Filter filter;
    Event* target = nullptr;  // trigger::TargetsEvent() commands
  };
  struct HistTrigger {
    std::shared_ptr<trigger::Histogram> hist;  // shared with the histograms reading its variables
    filter::Filter filter;
    std::vector<Event*> synth;  // per action: the synthetic event a trace() generates (a reference held)
    // name= sharing the histogram another event made: this event's own spec (its fields' places, its filter).
    std::optional<trigger::HistSpec> own;
    const trigger::HistSpec& spec() const { return own ? *own : hist->spec(); }
    const trigger::HistSpec* as() const { return own ? &*own : nullptr; }
  };
  // The histogram an earlier hist trigger of this instance made with name=`name`, or null.
  std::shared_ptr<trigger::Histogram> Named(std::string_view name) const;
  class ActionSink;
  struct Slot {
    std::vector<Trigger> triggers;  // newest first
    std::vector<HistTrigger> hists;  // oldest first
  };
  // A hist command: its errors go to the instance's error_log, as the kernel's hist_err().
  int WriteHist(InstanceSet& set, Instance& instance, Event& event, const trigger::Spec& spec, Slot& slot);
  int AddOrChangeHist(InstanceSet& set, Instance& instance, Event& event, const trigger::Spec& spec,
                      Slot& slot, trigger::HistError* error);
  // Binds each `$name` of `hist` to the one histogram of this instance defining it
  // (on an onmatch() event first): EINVAL when none does, or more than one.
  int BindVars(trigger::Histogram& hist, const std::shared_ptr<trigger::Histogram>& self,
               const std::vector<uint32_t>& preferred, trigger::HistError* error) const;
  // Looks up the events the actions of `h` name, holding the synthetic ones: EINVAL
  // for an unknown event or a trace() whose parameters do not match its fields.
  int BindActions(EventRegistry& registry, HistTrigger& h, std::vector<uint32_t>* matched,
                  trigger::HistError* error) const;
  void ReleaseHist(InstanceSet& set, Instance& instance, Event& event, HistTrigger& h);
  // Whether `t` acts on this record given the instance's state now.
  bool Act(Instance& instance, Trigger& t);
  void Release(InstanceSet& set, Instance& instance, Event& event, const Trigger& t);
  // `keep_referenced`: but those whose variables another histogram reads.
  void RemoveHists(InstanceSet& set, Instance& instance, Event& event, Slot& slot, bool keep_referenced);
  std::vector<Slot> slots_;  // by event id - kFirstId
};

}  // namespace udiag::service
