#include "service/event_triggers.h"

#include <algorithm>
#include <cerrno>

#include "service/instance.h"

namespace udiag::service {
namespace {

// The kernel strips blanks around what was written.
std::string_view Stripped(std::string_view text) {
  text = text.substr(0, text.find('\0'));
  size_t start = text.find_first_not_of(" \t\n\v\f\r");
  if (start == std::string_view::npos) return {};
  size_t end = text.find_last_not_of(" \t\n\v\f\r");
  return text.substr(start, end - start + 1);
}

}  // namespace

int EventTriggers::Write(InstanceSet& set, Instance& instance, Event& event, std::string_view text,
                         EventRegistry& registry) {
  if (text.size() > filter::kMaxFilterText) return EINVAL;
  std::string_view command = Stripped(text);
  if (command.empty()) return 0;
  Trigger t;
  if (int err = trigger::Parse(command, &t.spec)) return err;
  const bool targets = t.spec.command == trigger::Command::kEnableEvent ||
                       t.spec.command == trigger::Command::kDisableEvent;
  if (targets) {
    t.target = registry.FindByTracepoint(t.spec.system, t.spec.event);
    if (!t.target) return EINVAL;  // as the kernel's find_event_file failing
  }
  size_t slot = event.id - EventRegistry::kFirstId;
  if (slot >= triggers_.size()) triggers_.resize(slot + 1);
  std::vector<Trigger>& list = triggers_[slot];
  auto same = std::find_if(list.begin(), list.end(), [&](const Trigger& o) { return trigger::SameKind(o.spec, t.spec); });
  if (t.spec.remove) {
    if (same != list.end()) {
      Trigger gone = std::move(*same);
      list.erase(same);
      Release(set, instance, event, gone);
    }
    return 0;
  }
  if (!t.spec.filter.empty()) {
    filter::ParseError error;
    if (filter::Compile(t.spec.filter, event.desc.fields, &t.filter, &error) != 0) return EINVAL;
  }
  if (same != list.end()) return EEXIST;
  t.count = t.spec.count;
  // A triggering event fires whether or not it is enabled (the kernel's soft
  // mode), and so does the target of enable_event, so that it can be turned on.
  set.SetSoftMode(instance, &event, true);
  if (t.target) set.SetSoftMode(instance, t.target, true);
  if (t.spec.command == trigger::Command::kSnapshot) instance.AllocateSnapshot();
  list.insert(list.begin(), std::move(t));
  return 0;
}

void EventTriggers::Release(InstanceSet& set, Instance& instance, Event& event, const Trigger& t) {
  if (t.target) set.SetSoftMode(instance, t.target, false);
  set.SetSoftMode(instance, &event, false);
}

void EventTriggers::Clear(InstanceSet& set, Instance& instance) {
  for (size_t slot = 0; slot < triggers_.size(); ++slot) {
    std::vector<Trigger> list = std::move(triggers_[slot]);
    triggers_[slot].clear();
    // Held by the triggers' soft mode, the event is still registered.
    Event* event = set.registry().FindById(static_cast<uint32_t>(slot + EventRegistry::kFirstId));
    for (const Trigger& t : list) Release(set, instance, *event, t);
  }
}

std::string EventTriggers::Read(const Event& event) const {
  if (!Has(event)) return std::string(trigger::AvailableTriggers());
  std::string out;
  for (const Trigger& t : triggers_[event.id - EventRegistry::kFirstId]) out += trigger::ListingLine(t.spec, t.count);
  return out;
}

bool EventTriggers::Act(Instance& instance, Trigger& t) {
  if (t.count == 0) return false;
  switch (t.spec.command) {
    case trigger::Command::kTraceOn:
    case trigger::Command::kTraceOff: {
      bool on = t.spec.command == trigger::Command::kTraceOn;
      if (instance.tracing_on() == on) return false;  // counts only changes, as the kernel
      instance.set_tracing_on(on);
      break;
    }
    case trigger::Command::kSnapshot:
      instance.TakeSnapshot();
      break;
    case trigger::Command::kStacktrace:
      break;  // no stack to give: counted, nothing written (docs/compat.md)
    case trigger::Command::kEnableEvent:
    case trigger::Command::kDisableEvent: {
      bool on = t.spec.command == trigger::Command::kEnableEvent;
      if (instance.IsEnabled(t.target->id) == on) return false;
      instance.SetSoftEnabled(t.target->id, on);
      break;
    }
  }
  return true;
}

void EventTriggers::Fire(Instance& instance, const Event& event, const EntryMeta& meta,
                         std::span<const uint8_t> record, const CommLookup& comm) {
  for (Trigger& t : triggers_[event.id - EventRegistry::kFirstId]) {
    if (!t.spec.filter.empty()) {
      std::string name;
      if (t.filter.needs_comm() && comm) name = comm(meta.tid);
      if (!t.filter.Matches({record, meta.cpu, name})) continue;
    }
    if (Act(instance, t) && t.count != trigger::kUnlimited) --t.count;
  }
}

}  // namespace udiag::service
