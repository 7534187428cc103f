#include "service/event_triggers.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/tsc.h"
#include "service/instance.h"
#include "trigger/synth_event.h"

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

int CompileFilter(const std::string& text, const Event& event, filter::Filter* out) {
  if (text.empty()) return 0;
  filter::ParseError error;
  return filter::Compile(text, event.desc.fields, out, &error) == 0 ? 0 : EINVAL;
}

bool Passes(const filter::Filter& filter, bool has_filter, const EntryMeta& meta, std::span<const uint8_t> record,
            const CommLookup& comm, std::string* name) {
  if (!has_filter) return true;
  if (filter.needs_comm() && comm && name->empty()) *name = comm(meta.tid);
  return filter.Matches({record, meta.cpu, *name});
}

}  // namespace

int EventTriggers::Write(InstanceSet& set, Instance& instance, Event& event, std::string_view text, bool append,
                         EventRegistry& registry) {
  if (text.size() > filter::kMaxFilterText) return EINVAL;
  size_t index = event.id - EventRegistry::kFirstId;
  if (index >= slots_.size()) slots_.resize(index + 1);
  Slot& slot = slots_[index];
  if (!append)
    RemoveHists(set, instance, event, slot, /*keep_referenced=*/true);  // as the kernel's hist_unreg_all
  std::string_view command = Stripped(text);
  if (command.empty()) return 0;
  Trigger t;
  if (int err = trigger::Parse(command, &t.spec)) return err;
  if (t.spec.command == trigger::Command::kHist) return WriteHist(set, instance, event, t.spec, slot);
  if (trigger::TargetsEvent(t.spec.command)) {
    t.target = registry.FindByTracepoint(t.spec.system, t.spec.event);
    if (!t.target) return EINVAL;  // as the kernel's find_event_file failing
  }
  std::vector<Trigger>& list = slot.triggers;
  auto same = std::find_if(list.begin(), list.end(), [&](const Trigger& o) { return trigger::SameKind(o.spec, t.spec); });
  if (t.spec.remove) {
    if (same != list.end()) {
      Trigger gone = std::move(*same);
      list.erase(same);
      Release(set, instance, event, gone);
    }
    return 0;
  }
  if (int err = CompileFilter(t.spec.filter, event, &t.filter)) return err;
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

int EventTriggers::WriteHist(InstanceSet& set, Instance& instance, Event& event, const trigger::Spec& spec,
                             Slot& slot) {
  trigger::HistError error;
  int err = AddOrChangeHist(set, instance, event, spec, slot, &error);
  if (err && error.code != trigger::HistErrorCode::kNone) {
    // As the kernel's hist_err(): "hist:" and what followed it in the write.
    std::string command = "hist:" + spec.param + (spec.filter.empty() ? "" : " if " + spec.filter);
    instance.error_log().Add(
        trigger::HistErrorLogEntry(base::MonotonicNs(), event.system(), event.tp_name, command, error));
  }
  return err;
}

int EventTriggers::AddOrChangeHist(InstanceSet& set, Instance& instance, Event& event,
                                   const trigger::Spec& spec, Slot& slot, trigger::HistError* error) {
  trigger::HistSpec hist;
  if (int err = trigger::ParseHist(spec.param, event.desc.fields, &hist, error)) return err;
  hist.filter = spec.filter;
  filter::Filter filter;
  if (int err = CompileFilter(hist.filter, event, &filter)) return err;
  auto same = std::find_if(slot.hists.begin(), slot.hists.end(),
                           [&](const HistTrigger& h) { return trigger::SameHist(h.spec(), hist); });
  if (spec.remove) {
    if (same != slot.hists.end()) {
      if (same->hist->referenced()) return EBUSY;  // as the kernel's check_var_refs
      ReleaseHist(set, instance, event, *same);
      slot.hists.erase(same);
    }
    return 0;
  }
  if (same != slot.hists.end()) {
    switch (hist.control) {
      case trigger::HistControl::kPause:
        same->hist->set_paused(true);
        return 0;
      case trigger::HistControl::kCont:
        same->hist->set_paused(false);
        return 0;
      case trigger::HistControl::kClear:
        same->hist->Clear();
        return 0;
      case trigger::HistControl::kNone:
        trigger::HistFail(error, trigger::HistErrorCode::kTriggerEexist, "");
        return EEXIST;
    }
  }
  if (hist.control == trigger::HistControl::kCont || hist.control == trigger::HistControl::kClear) {
    trigger::HistFail(error, trigger::HistErrorCode::kTriggerEnoentClear, "");
    return ENOENT;
  }
  const bool paused = hist.control == trigger::HistControl::kPause;
  if (auto named = Named(hist.name)) {
    // The kernel's named triggers: one table, each event counting into it with its own fields and filter.
    if (!trigger::CanShare(named->spec(), hist)) {
      return trigger::HistFail(error, trigger::HistErrorCode::kNamedMismatch, hist.name);
    }
    if (paused) named->set_paused(true);
    slot.hists.push_back({std::move(named), std::move(filter), {}, std::move(hist)});
    set.SetSoftMode(instance, &event, true);
    return 0;
  }
  HistTrigger made{
      std::make_shared<trigger::Histogram>(std::move(hist)), std::move(filter), {}, std::nullopt};
  std::vector<uint32_t> matched;
  int err = BindActions(set.registry(), made, &matched, error);
  if (!err) err = BindVars(*made.hist, made.hist, matched, error);
  if (err) {
    made.hist->Unbind();
    for (Event* e : made.synth) {
      if (e) set.registry().Put(e);
    }
    return err;
  }
  made.hist->set_paused(paused);
  slot.hists.push_back(std::move(made));
  set.SetSoftMode(instance, &event, true);
  return 0;
}

std::shared_ptr<trigger::Histogram> EventTriggers::Named(std::string_view name) const {
  if (name.empty()) return nullptr;
  for (const Slot& slot : slots_) {
    for (const HistTrigger& h : slot.hists) {
      if (h.hist->spec().name == name) return h.hist;
    }
  }
  return nullptr;
}

int EventTriggers::BindActions(EventRegistry& registry, HistTrigger& h, std::vector<uint32_t>* matched,
                               trigger::HistError* error) const {
  for (const trigger::HistAction& a : h.hist->spec().actions) {
    Event* synth = nullptr;
    if (a.handler == trigger::Handler::kOnMatch) {
      const Event* match = registry.FindByTracepoint(a.match_system, a.match_event);
      if (!match) return trigger::HistFail(error, trigger::HistErrorCode::kEventFileNotFound, a.match_event);
      matched->push_back(match->id);
    }
    if (a.kind == trigger::ActionKind::kTrace) {
      synth = registry.FindByTracepoint("synthetic", a.synth);
      if (!synth) return trigger::HistFail(error, trigger::HistErrorCode::kSynthEventNotFound, a.synth);
      if (synth->desc.fields.size() != a.params.size()) {
        return trigger::HistFail(error, trigger::HistErrorCode::kSynthCountMismatch, a.synth);
      }
      registry.Get(synth);  // defining it again or deleting it is EBUSY meanwhile
    }
    h.synth.push_back(synth);
  }
  return 0;
}

int EventTriggers::BindVars(trigger::Histogram& hist, const std::shared_ptr<trigger::Histogram>& self,
                            const std::vector<uint32_t>& preferred, trigger::HistError* error) const {
  const std::vector<trigger::VarRef>& refs = hist.spec().refs;
  for (size_t i = 0; i < refs.size(); ++i) {
    if (refs[i].own) continue;
    std::shared_ptr<trigger::Histogram> owner;
    size_t var = 0;
    bool ambiguous = false;
    // First the onmatch() events' histograms, then every event's.
    for (int pass = 0; pass < 2 && !owner; ++pass) {
      for (size_t index = 0; index < slots_.size(); ++index) {
        bool is_preferred =
            std::find(preferred.begin(), preferred.end(), index + EventRegistry::kFirstId) != preferred.end();
        if (pass == 0 && !is_preferred) continue;
        for (const HistTrigger& h : slots_[index].hists) {
          auto found = h.hist->FindVar(refs[i].name);
          if (!found || h.hist == self) continue;
          ambiguous = ambiguous || owner != nullptr;
          owner = h.hist;
          var = *found;
        }
      }
    }
    if (!owner) return trigger::HistFail(error, trigger::HistErrorCode::kVarNotFound, "$" + refs[i].name);
    if (ambiguous) return trigger::HistFail(error, trigger::HistErrorCode::kVarNotUnique, "$" + refs[i].name);
    hist.BindRef(i, std::move(owner), var);
  }
  return 0;
}

void EventTriggers::Release(InstanceSet& set, Instance& instance, Event& event, const Trigger& t) {
  if (t.target) set.SetSoftMode(instance, t.target, false);
  set.SetSoftMode(instance, &event, false);
}

void EventTriggers::ReleaseHist(InstanceSet& set, Instance& instance, Event& event, HistTrigger& h) {
  h.hist->Unbind();
  for (Event* e : std::exchange(h.synth, {})) {
    if (e) set.registry().Put(e);
  }
  set.SetSoftMode(instance, &event, false);
}

void EventTriggers::RemoveHists(InstanceSet& set, Instance& instance, Event& event, Slot& slot,
                                bool keep_referenced) {
  std::erase_if(slot.hists, [&](HistTrigger& h) {
    if (keep_referenced && h.hist->referenced()) return false;
    ReleaseHist(set, instance, event, h);
    return true;
  });
}

void EventTriggers::Clear(InstanceSet& set, Instance& instance) {
  for (size_t index = 0; index < slots_.size(); ++index) {
    Slot slot = std::move(slots_[index]);
    slots_[index] = Slot{};
    if (slot.triggers.empty() && slot.hists.empty()) continue;
    // Held by the triggers' soft mode, the event is still registered.
    Event* event = set.registry().FindById(static_cast<uint32_t>(index + EventRegistry::kFirstId));
    for (const Trigger& t : slot.triggers) Release(set, instance, *event, t);
    RemoveHists(set, instance, *event, slot, /*keep_referenced=*/false);
  }
}

std::string EventTriggers::Read(const Event& event) const {
  if (!Has(event)) return std::string(trigger::AvailableTriggers());
  const Slot& slot = slots_[event.id - EventRegistry::kFirstId];
  std::string out;
  for (const Trigger& t : slot.triggers) out += trigger::ListingLine(t.spec, t.count);
  for (const HistTrigger& h : slot.hists) out += trigger::HistInfo(h.spec(), h.hist->paused());
  return out;
}

std::string EventTriggers::ReadHist(const Event& event) const {
  size_t index = event.id - EventRegistry::kFirstId;
  std::string out;
  if (index >= slots_.size()) return out;
  for (const HistTrigger& h : slots_[index].hists)
    out += (out.empty() ? "" : "\n\n") + h.hist->Render(h.as());
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
    case trigger::Command::kHist:
      return false;  // histograms are kept apart, in Slot::hists
    case trigger::Command::kEnableEvent:
    case trigger::Command::kDisableEvent: {
      bool on = t.spec.command == trigger::Command::kEnableEvent;
      if (instance.IsEnabled(t.target->id) == on) return false;
      instance.SetSoftEnabled(t.target->id, on);
      break;
    }
    case trigger::Command::kEnableHist:
    case trigger::Command::kDisableHist:
      // Every histogram of the target in this instance; counted every time, as the kernel.
      if (size_t index = t.target->id - EventRegistry::kFirstId; index < slots_.size()) {
        for (HistTrigger& h : slots_[index].hists)
          h.hist->set_paused(t.spec.command == trigger::Command::kDisableHist);
      }
      break;
  }
  return true;
}

// Hist actions of one record: trace() delivers its synthetic event to every
// instance that takes it in (its own triggers included), snapshot() snapshots
// this instance.
class EventTriggers::ActionSink : public trigger::HistSink {
 public:
  ActionSink(InstanceSet& set, Instance& instance, const HistTrigger& h, const EntryMeta& meta, int32_t pid)
      : set_(set), instance_(instance), h_(h), meta_(meta), pid_(pid) {}
  void Trace(size_t action, std::span<const uint64_t> values) override {
    // A synthetic event whose histogram generates synthetic events: bounded, as the kernel's recursion guard.
    static int depth = 0;
    constexpr int kMaxDepth = 4;
    Event* synth = h_.synth[action];
    if (!synth || depth == kMaxDepth) return;
    std::vector<uint8_t> record =
        trigger::SynthRecord(static_cast<uint16_t>(synth->id), pid_, synth->desc.fields, values);
    ++depth;
    set_.Deliver(*synth, meta_, record);
    --depth;
  }
  void Snapshot() override { instance_.TakeSnapshot(); }

 private:
  InstanceSet& set_;
  Instance& instance_;
  const HistTrigger& h_;
  const EntryMeta& meta_;
  int32_t pid_;
};

void EventTriggers::Fire(InstanceSet& set, Instance& instance, const Event& event, const EntryMeta& meta,
                         std::span<const uint8_t> record, const CommLookup& comm) {
  Slot& slot = slots_[event.id - EventRegistry::kFirstId];
  std::string name;  // looked up once, when a filter or .execname needs it
  for (Trigger& t : slot.triggers) {
    if (!Passes(t.filter, !t.spec.filter.empty(), meta, record, comm, &name)) continue;
    if (Act(instance, t) && t.count != trigger::kUnlimited) --t.count;
  }
  for (HistTrigger& h : slot.hists) {
    if (h.hist->paused() || !Passes(h.filter, !h.spec().filter.empty(), meta, record, comm, &name)) continue;
    if (name.empty() && comm && h.hist->needs_comm()) name = comm(meta.tid);
    int32_t pid = 0;  // the writer's common_pid, as the synthetic event's
    if (record.size() >= schema::kCommonHeaderSize) std::memcpy(&pid, record.data() + 4, sizeof(pid));
    ActionSink sink(set, instance, h, meta, pid);
    h.hist->Add({{record, meta.cpu, name}, meta.timestamp}, &sink, h.as());
  }
}

}  // namespace udiag::service
