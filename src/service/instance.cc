#include "service/instance.h"

namespace udiag::service {

InstanceSet::InstanceSet(EventRegistry* registry) : registry_(registry) {}

Instance* InstanceSet::Find(std::string_view name) { return name.empty() ? &top_ : nullptr; }

bool InstanceSet::AnyEnables(uint32_t id) const { return top_.IsEnabled(id); }

void InstanceSet::SetEnabled(Instance& instance, Event* event, bool on) {
  if (instance.IsEnabled(event->id) == on) return;
  if (on) {
    instance.enabled_.insert(event->id);
    registry_->Get(event);
  } else {
    instance.enabled_.erase(event->id);
  }
  registry_->SetStatusBits(event, kStatusFtrace, AnyEnables(event->id));
  if (!on) registry_->Put(event);
}

void InstanceSet::Deliver(const Event& event, const EntryMeta& meta, std::span<const uint8_t> record) {
  if (top_.tracing_on() && top_.IsEnabled(event.id)) top_.buffer().Append(meta, record);
}

void InstanceSet::NoteLost(uint64_t count) {
  if (top_.tracing_on()) top_.buffer().NoteLost(count);
}

}  // namespace udiag::service
