// One instance's event triggers: the `trigger` files of events/<system>/<event>,
// as the kernel keeps them per trace instance. They fire as the daemon takes
// records in, before the record's filter and its copy into the buffer, and
// act on their own instance (tracing_on, snapshot, enabling events).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "filter/filter.h"
#include "service/event_filters.h"
#include "service/event_registry.h"
#include "service/trace_buffer.h"
#include "trigger/trigger.h"

namespace udiag::service {

class Instance;
class InstanceSet;

class EventTriggers {
 public:
  // A write to events/<system>/<event>/trigger of `instance`: one command,
  // or "!command" to remove one. Returns 0, EINVAL (bad command, filter or
  // target event) or EEXIST (that kind of trigger is there already).
  // Removing a trigger that is not there succeeds, as in the kernel.
  int Write(InstanceSet& set, Instance& instance, Event& event, std::string_view text, EventRegistry& registry);
  // What the file reads: the triggers, newest first, or the available commands.
  std::string Read(const Event& event) const;
  // Removes every trigger (the instance goes away).
  void Clear(InstanceSet& set, Instance& instance);

  bool Has(const Event& event) const {
    size_t slot = event.id - EventRegistry::kFirstId;
    return slot < triggers_.size() && !triggers_[slot].empty();
  }
  // Runs the event's triggers for one record (Has() first: this is the slow path).
  void Fire(Instance& instance, const Event& event, const EntryMeta& meta, std::span<const uint8_t> record,
            const CommLookup& comm);

 private:
  struct Trigger {
    trigger::Spec spec;
    uint64_t count = trigger::kUnlimited;  // acts left, or kUnlimited
    filter::Filter filter;
    Event* target = nullptr;  // enable_event/disable_event
  };
  // Whether `t` acts on this record given the instance's state now.
  static bool Act(Instance& instance, Trigger& t);
  void Release(InstanceSet& set, Instance& instance, Event& event, const Trigger& t);
  std::vector<std::vector<Trigger>> triggers_;  // by event id - kFirstId, newest first
};

}  // namespace udiag::service
