#include "service/event_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

#include "service/status_page.h"

namespace udiag::service {
namespace {

// The name is everything before the first space; the rest is the field text.
std::pair<std::string_view, std::string_view> SplitCommand(std::string_view command) {
  size_t space = command.find(' ');
  if (space == std::string_view::npos) return {command, {}};
  return {command.substr(0, space), command.substr(space + 1)};
}

std::vector<schema::LocCheck> LocChecksOf(const schema::EventDescription& desc) {
  std::vector<schema::LocCheck> locs;
  for (const auto& f : desc.fields) {
    if (f.kind != schema::FieldKind::kDataLoc && f.kind != schema::FieldKind::kRelLoc) continue;
    locs.push_back({static_cast<uint16_t>(f.offset),
                    static_cast<uint8_t>(f.kind == schema::FieldKind::kRelLoc),
                    static_cast<uint8_t>(f.is_string)});
  }
  return locs;
}

}  // namespace

EventRegistry::EventRegistry(StatusPage* status_page, Observer* observer)
    : status_page_(status_page),
      observer_(observer),
      by_slot_(status_page->capacity(), nullptr),
      reserved_(status_page->capacity(), false) {}

EventRegistry::~EventRegistry() = default;

base::ErrorOr<Event*> EventRegistry::FindOrCreate(std::string_view command, bool multi_format,
                                                  bool persist) {
  auto [name, args] = SplitCommand(command);
  if (name.find(':') != std::string_view::npos) return base::Errno{EINVAL};

  // Existing events are matched on the raw field text before it is parsed,
  // so a conflicting name wins over a syntax error, as in the kernel.
  for (Event* e : UserEvents()) {
    if (e->multi_format != multi_format || e->reg_name() != name) continue;
    if (schema::FieldsMatch(e->desc.fields, args)) {
      Get(e);
      return e;
    }
    if (!multi_format) return base::Errno{EADDRINUSE};
  }

  schema::EventDescription desc;
  if (int err = schema::ParseCommand(command, &desc)) return base::Errno{err};
  return Create(std::move(desc), multi_format, persist);
}

base::ErrorOr<Event*> EventRegistry::CreateSynthetic(schema::EventDescription desc) {
  for (const Event* e : Events()) {
    if (e->synthetic && e->reg_name() == desc.name) return base::Errno{EEXIST};
  }
  auto e = Create(std::move(desc), false, true, true);
  if (e.ok()) Put(*e);  // keep only the self reference, as dynamic_events does
  return e;
}

int EventRegistry::DeleteSynthetic(std::string_view name) {
  for (Event* e : Events()) {
    if (!e->synthetic || e->reg_name() != name) continue;
    if (!IsLastReference(*e)) return EBUSY;
    Destroy(e);
    return 0;
  }
  return ENOENT;
}

base::ErrorOr<Event*> EventRegistry::Create(schema::EventDescription desc, bool multi_format, bool persist,
                                            bool synthetic) {
  if (events_.size() >= max_events_ || !observer_->MayCreateEvent()) return base::Errno{EMFILE};
  // Ids go round-robin so that a freed id is reused as late as possible:
  // records of a deleted event may still sit in a buffer under its id.
  uint32_t capacity = status_page_->capacity();
  uint32_t id = 0;
  for (uint32_t i = 0; i < capacity && id == 0; ++i) {
    uint32_t slot = (next_id_offset_ + i) % capacity;
    if (!reserved_[slot] && !events_.contains(kFirstId + slot)) id = kFirstId + slot;
  }
  if (id == 0) return base::Errno{ENODEV};
  next_id_offset_ = id - kFirstId + 1;

  auto e = std::make_unique<Event>();
  e->id = id;
  e->multi_format = multi_format;
  e->tp_name = multi_format ? fmt::format("{}.{:x}", desc.name, next_multi_id_++) : desc.name;
  e->persistent = persist;
  e->synthetic = synthetic;
  e->locs = LocChecksOf(desc);
  e->desc = std::move(desc);
  e->refs = persist ? 2 : 1;
  e->created_seq = next_created_seq_++;
  Event* raw = e.get();
  by_slot_[id - kFirstId] = raw;
  events_.emplace(id, std::move(e));
  status_page_->Set(id, 0);
  observer_->OnEventCreated(*raw);
  return raw;
}

void EventRegistry::Put(Event* event) {
  if (--event->refs == 0 && !event->persistent) doomed_.push_back(event->id);
}

void EventRegistry::CollectGarbage() {
  for (uint32_t id : std::exchange(doomed_, {})) {
    Event* e = FindById(id);
    // A registration since the last reference went away resurrects it.
    if (e && e->refs == 0 && !e->persistent) Destroy(e);
  }
}

bool EventRegistry::IsLastReference(const Event& event) const {
  return event.refs == (event.persistent ? 1 : 0);
}

void EventRegistry::Destroy(Event* event) {
  observer_->OnEventDestroyed(*event);
  status_page_->Set(event->id, 0);
  by_slot_[event->id - kFirstId] = nullptr;
  events_.erase(event->id);
}

int EventRegistry::DeleteByName(std::string_view name, bool privileged) {
  bool found = false;
  for (Event* e : UserEvents()) {
    if (e->reg_name() != name) continue;
    found = true;
    if (!IsLastReference(*e)) return EBUSY;
    if (e->persistent && !privileged) return EPERM;
    Destroy(e);
  }
  return found ? 0 : ENOENT;
}

int EventRegistry::DeleteMatching(std::string_view system, std::string_view name,
                                  std::string_view args, bool privileged) {
  // Either system name matches both kinds of event (kernel quirk).
  if (!system.empty() && system != "user_events" && system != "user_events_multi") return ENOENT;
  bool found = false;
  for (Event* e : UserEvents()) {
    if (e->reg_name() != name || !schema::FieldsMatch(e->desc.fields, args)) continue;
    found = true;
    if (!IsLastReference(*e)) return EBUSY;
    if (e->persistent && !privileged) return EPERM;
    Destroy(e);
  }
  return found ? 0 : ENOENT;
}

int EventRegistry::DeleteAll(bool privileged) {
  std::vector<Event*> all = UserEvents();
  for (Event* e : all) {
    if (!IsLastReference(*e)) return EBUSY;
    if (e->persistent && !privileged) return EPERM;
  }
  for (Event* e : all) Destroy(e);
  return 0;
}

void EventRegistry::SetStatusBits(Event* event, uint8_t bits, bool on) {
  uint8_t status = on ? (event->status | bits) : (event->status & ~bits);
  if (status == event->status) return;
  event->status = status;
  status_page_->Set(event->id, status);
  observer_->OnEventStatusChanged(*event);
}

void EventRegistry::ReserveIds(const std::vector<uint32_t>& ids) {
  for (uint32_t id : ids) {
    if (id >= kFirstId && id - kFirstId < reserved_.size()) reserved_[id - kFirstId] = true;
  }
}

Event* EventRegistry::FindById(uint32_t id) const {
  return id - kFirstId < by_slot_.size() ? by_slot_[id - kFirstId] : nullptr;
}

Event* EventRegistry::FindByTracepoint(std::string_view system, std::string_view tp_name) const {
  for (const auto& [_, e] : events_) {
    if (e->tp_name == tp_name && system == e->system()) return e.get();
  }
  return nullptr;
}

std::vector<Event*> EventRegistry::Events() const {
  std::vector<Event*> out;
  out.reserve(events_.size());
  for (const auto& [_, e] : events_) out.push_back(e.get());
  std::sort(out.begin(), out.end(),
            [](const Event* a, const Event* b) { return a->created_seq < b->created_seq; });
  return out;
}

std::vector<Event*> EventRegistry::UserEvents() const {
  std::vector<Event*> out = Events();
  std::erase_if(out, [](const Event* e) { return e->synthetic; });
  return out;
}

}  // namespace udiag::service
