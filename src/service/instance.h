// Trace instances: the top-level one and (later) instances/<name>/. Each has
// its own buffer, tracing_on switch and set of enabled events; an event's
// ftrace status bit is set while any instance enables it, and each enabling
// instance holds a reference on the event, as a kernel tracer probe does.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>

#include "service/event_registry.h"
#include "service/trace_buffer.h"

namespace udiag::service {

inline constexpr size_t kDefaultBufferKb = 4096;

class Instance {
 public:
  explicit Instance(std::string name) : name_(std::move(name)), buffer_(kDefaultBufferKb * 1024) {}

  const std::string& name() const { return name_; }
  TraceBuffer& buffer() { return buffer_; }
  const TraceBuffer& buffer() const { return buffer_; }
  bool tracing_on() const { return tracing_on_; }
  void set_tracing_on(bool on) { tracing_on_ = on; }
  bool IsEnabled(uint32_t id) const { return enabled_.contains(id); }
  const std::set<uint32_t>& enabled() const { return enabled_; }

 private:
  friend class InstanceSet;
  std::string name_;
  TraceBuffer buffer_;
  bool tracing_on_ = true;
  std::set<uint32_t> enabled_;
};

class InstanceSet {
 public:
  explicit InstanceSet(EventRegistry* registry);

  Instance& top() { return top_; }
  // "" is the top instance.
  Instance* Find(std::string_view name);

  // Enables or disables `event` in `instance`, keeping references and the
  // event's ftrace status bit right. Idempotent.
  void SetEnabled(Instance& instance, Event* event, bool on);
  // Copies a record into every instance that enables its event and is on.
  void Deliver(const Event& event, const EntryMeta& meta, std::span<const uint8_t> record);
  // Producer-ring losses: reported by every instance that traces the producer's events.
  void NoteLost(uint64_t count);

 private:
  bool AnyEnables(uint32_t id) const;
  EventRegistry* registry_;
  Instance top_{""};
};

}  // namespace udiag::service
