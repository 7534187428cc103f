// Auto-enable: a consumer's globs hold matching events enabled, for events
// registered later too, while it stays connected.
#include "service/server.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <cerrno>

namespace udiag::service {

int Server::OnAutoEnable(Connection& conn, ipc::Decoder& body) {
  ipc::AutoEnableRequest req;
  if (!req.Decode(body)) return EPROTO;
  if (!conn.caller.consumer) return EACCES;
  if (!instances_->Find(req.instance)) return ENOENT;
  conn.auto_rules.push_back({req.glob, req.instance, req.filter, req.trigger});
  for (Event* e : registry_->Events()) ApplyAutoEnable(conn, *e);
  return 0;
}

// Holds `event` enabled in an instance for `conn` if one of its globs for that
// instance matches. The event is enabled by the first hold and disabled when
// the last goes (ReleaseAutoEnables), unless someone else had enabled it.
void Server::ApplyAutoEnable(Connection& conn, Event& event) {
  std::string full = fmt::format("{}:{}", event.system(), event.tp_name);
  for (const AutoRule& rule : conn.auto_rules) {
    AutoKey key{rule.instance, event.id};
    if (conn.auto_enabled.contains(key)) continue;
    bool has_system = rule.glob.find(':') != std::string::npos;
    if (fnmatch(rule.glob.c_str(), has_system ? full.c_str() : event.tp_name.c_str(), 0) != 0) continue;
    Instance* instance = instances_->Find(rule.instance);
    if (!instance) continue;
    // A filter that does not parse for the event keeps it off (the error is in its filter file and error_log).
    if (!rule.filter.empty()) {
      if (instance->filters().Write(event, rule.filter, &instance->error_log())) continue;
      conn.auto_filters[key] = rule.filter;
    }
    // So does a trigger that is refused for it.
    if (!rule.trigger.empty() &&
        instance->triggers().Write(*instances_, *instance, event, rule.trigger, true, *registry_) != 0) {
      continue;
    }
    conn.auto_enabled.insert(key);
    if (auto_holds_[key]++ == 0 && !instance->IsEnabled(event.id)) {
      auto_turned_on_.insert(key);
      instances_->SetEnabled(*instance, &event, true);
    }
  }
}

// The last hold on an event undoes what the rules did to it: the enable
// (unless someone else had enabled it) and the filter (unless someone has
// written another since), so `udiag trace -f` leaves no filter behind.
void Server::ReleaseAutoEnables(Connection& conn) {
  for (const AutoKey& key : conn.auto_enabled) {
    if (--auto_holds_[key] > 0) continue;
    auto_holds_.erase(key);
    bool turned_on = auto_turned_on_.erase(key) > 0;
    Event* e = registry_->FindById(key.second);
    Instance* instance = instances_->Find(key.first);
    if (!e || !instance) continue;
    if (turned_on) instances_->SetEnabled(*instance, e, false);
    auto filter = conn.auto_filters.find(key);
    if (filter != conn.auto_filters.end() && instance->filters().Read(*e) == filter->second + "\n") {
      instance->filters().Write(*e, "0", &instance->error_log());
    }
  }
  conn.auto_enabled.clear();
  conn.auto_filters.clear();
}

void Server::ForgetAutoEnables(const std::string& name) {
  auto of_instance = [&](const AutoKey& key) { return key.first == name; };
  std::erase_if(auto_holds_, [&](const auto& entry) { return of_instance(entry.first); });
  std::erase_if(auto_turned_on_, of_instance);
  for (auto& [_, conn] : connections_) {
    std::erase_if(conn->auto_enabled, of_instance);
    std::erase_if(conn->auto_rules, [&](const AutoRule& rule) { return rule.instance == name; });
  }
}

}  // namespace udiag::service
