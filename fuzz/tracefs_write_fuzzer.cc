// Fuzzes the virtual tracefs tree's handlers with what a consumer may send:
// writes (dynamic_events, set_event, enable, numeric files...), mkdir and
// rmdir of instances, and reads of what the writes made.
//
// Input: operations separated by NUL bytes, each "<op><path>\t<text>" with
// op 'w' (write, truncating), 'a' (append), 'm' (mkdir), 'r' (rmdir) or
// 'R' (read).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "service/event_registry.h"
#include "service/instance.h"
#include "service/status_page.h"
#include "service/tracefs_tree.h"

using namespace udiag::service;

namespace {

struct NoObserver : EventRegistry::Observer {
  void OnEventCreated(Event&) override {}
  void OnEventStatusChanged(Event&) override {}
  void OnEventDestroyed(const Event&) override {}
};

void Apply(TracefsTree& tree, std::string_view op) {
  static const Caller kRoot{true, true, true};
  if (op.empty()) return;
  const char kind = op[0];
  op.remove_prefix(1);
  const size_t tab = op.find('\t');
  const std::string_view path = op.substr(0, tab);
  const std::string_view text = tab == std::string_view::npos ? std::string_view() : op.substr(tab + 1);
  switch (kind) {
    case 'w':
    case 'a':
      tree.Write(path, text, kind == 'a', kRoot);
      break;
    case 'm':
      tree.Mkdir(path, 0, kRoot);
      break;
    case 'r':
      (void)tree.Rmdir(path, kRoot);
      break;
    case 'R':
      (void)tree.Read(path, kRoot);
      (void)tree.List(path, kRoot);
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto page = StatusPage::Create(EventRegistry::kFirstId, 64);
  if (!page.ok()) abort();
  NoObserver observer;
  EventRegistry registry(&*page, &observer);
  InstanceSet instances(&registry);
  TracefsTree tree(&registry, &instances, [](uint32_t) { return std::string("app"); });
  std::string_view input(reinterpret_cast<const char*>(data), size);
  while (!input.empty()) {
    const size_t nul = input.find('\0');
    Apply(tree, input.substr(0, nul));
    input.remove_prefix(nul == std::string_view::npos ? input.size() : nul + 1);
  }
  return 0;
}
