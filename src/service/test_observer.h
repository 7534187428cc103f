// A registry observer for tests: records what the registry reported.
#pragma once

#include <vector>

#include "service/event_registry.h"

namespace udiag::service {

struct RecordingObserver : EventRegistry::Observer {
  void OnEventCreated(Event& e) override { created.push_back(e.id); }
  void OnEventStatusChanged(Event& e) override { status_changes.push_back({e.id, e.status}); }
  void OnEventDestroyed(const Event& e) override { destroyed.push_back(e.id); }
  std::vector<uint32_t> created, destroyed;
  std::vector<std::pair<uint32_t, uint8_t>> status_changes;
};

}  // namespace udiag::service
