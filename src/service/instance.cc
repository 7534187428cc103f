#include "service/instance.h"

#include <algorithm>
#include <cerrno>

namespace udiag::service {
namespace {

// One path component that set_event lines and shells can name: no
// slashes, blanks or control characters.
bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
  return std::none_of(name.begin(), name.end(), [](char c) { return c == '/' || static_cast<unsigned char>(c) <= ' '; });
}

}  // namespace

bool Instance::HoldsBack(uint64_t now_ns, size_t max_record_bytes) {
  if (blocking_timeout_ms_ == 0 || buffer_.overwrite() || !tracing_on_ || enabled_.empty()) return false;
  const uint64_t reads = buffer_.stats().read;
  if (reads != reads_seen_ || RoomFor(max_record_bytes) > 0) {
    reads_seen_ = reads;
    last_progress_ns_ = now_ns;
  }
  return now_ns - last_progress_ns_ < uint64_t{blocking_timeout_ms_} * 1'000'000;
}

InstanceSet::InstanceSet(EventRegistry* registry) : registry_(registry) {}

InstanceSet::~InstanceSet() = default;

Instance* InstanceSet::Find(std::string_view name) {
  if (name.empty()) return &top_;
  auto it = named_.find(name);
  return it == named_.end() ? nullptr : it->second.get();
}

int InstanceSet::Create(std::string_view name, uint64_t owner) {
  if (!ValidName(name)) return EINVAL;
  if (named_.contains(name)) return EEXIST;
  if (named_.size() >= kMaxInstances) return ENOSPC;
  auto instance = std::make_unique<Instance>(std::string(name));
  instance->owner_ = owner;
  named_.emplace(std::string(name), std::move(instance));
  return 0;
}

int InstanceSet::Remove(std::string_view name) {
  auto it = named_.find(name);
  if (it == named_.end()) return ENOENT;
  Instance& instance = *it->second;
  if (instance.readers() > 0 || instance.record_streams() > 0) return EBUSY;
  instance.triggers().Clear(*this, instance);
  std::set<uint32_t> enabled = instance.enabled_;
  for (uint32_t id : enabled) SetEnabled(instance, registry_->FindById(id), false);
  named_.erase(it);
  return 0;
}

std::vector<Instance*>* InstanceSet::EnablersOf(uint32_t id) {
  size_t slot = id - EventRegistry::kFirstId;
  if (id < EventRegistry::kFirstId) return nullptr;
  if (slot >= enablers_.size()) enablers_.resize(slot + 1);
  return &enablers_[slot];
}

bool InstanceSet::AnyEnables(uint32_t id) const {
  size_t slot = id - EventRegistry::kFirstId;
  return id >= EventRegistry::kFirstId && slot < enablers_.size() && !enablers_[slot].empty();
}

bool InstanceSet::RecordedBy(uint32_t id) const {
  size_t slot = id - EventRegistry::kFirstId;
  if (id < EventRegistry::kFirstId || slot >= enablers_.size()) return false;
  return std::any_of(enablers_[slot].begin(), enablers_[slot].end(), [](const Instance* i) { return i->records(); });
}

void InstanceSet::SetEnabled(Instance& instance, Event* event, bool on) {
  if (instance.IsEnabled(event->id) == on) return;
  bool was = instance.Registered(event->id);
  instance.SetSoftEnabled(event->id, on);
  UpdateRegistration(instance, event, was);
}

void InstanceSet::SetSoftMode(Instance& instance, Event* event, bool on) {
  bool was = instance.Registered(event->id);
  if (on) {
    ++instance.soft_refs_[event->id];
  } else if (auto it = instance.soft_refs_.find(event->id); it != instance.soft_refs_.end() && --it->second == 0) {
    instance.soft_refs_.erase(it);
  }
  UpdateRegistration(instance, event, was);
}

void InstanceSet::UpdateRegistration(Instance& instance, Event* event, bool was_registered) {
  bool now = instance.Registered(event->id);
  if (now == was_registered) return;
  std::vector<Instance*>* enablers = EnablersOf(event->id);
  if (now) {
    enablers->push_back(&instance);
    registry_->Get(event);
  } else {
    std::erase(*enablers, &instance);
  }
  registry_->SetStatusBits(event, kStatusFtrace, AnyEnables(event->id));
  if (!now) registry_->Put(event);
}

void InstanceSet::NoteLost(uint64_t count, bool disk_behind) {
  if (top_.tracing_on()) top_.buffer().NoteLost(count, disk_behind);
  // A named instance tracing nothing has nothing to lose.
  for (auto& [_, instance] : named_) {
    if (instance->tracing_on() && !instance->enabled_.empty())
      instance->buffer().NoteLost(count, disk_behind);
  }
}

}  // namespace udiag::service
