// The daemon's per-record cost of event filters and hist triggers:
// InstanceSet::Deliver of one record into one instance without a filter, with
// a filter it passes and with one it fails (nothing copied), Filter::Matches
// alone, and Deliver into an instance where a histogram counts the event.
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "filter/filter.h"
#include "service/instance.h"
#include "service/status_page.h"

namespace udiag::service {
namespace {

struct NoObserver : EventRegistry::Observer {
  void OnEventCreated(Event&) override {}
  void OnEventStatusChanged(Event&) override {}
  void OnEventDestroyed(const Event&) override {}
};

// A registry holding the event "req u32 status; __rel_loc char[] path".
struct RequestEvent {
  RequestEvent() : page(std::move(StatusPage::Create(EventRegistry::kFirstId, 64)).value()), registry(&page, &observer) {
    event = registry.FindOrCreate("req u32 status; __rel_loc char[] path", false, false).value();
  }
  ~RequestEvent() { registry.Put(event); }
  NoObserver observer;
  StatusPage page;
  EventRegistry registry;
  Event* event = nullptr;
};

// A record of "req" with the given values.
std::vector<uint8_t> Request(const Event& event, uint32_t status, const char* path) {
  const size_t path_bytes = std::strlen(path) + 1;
  std::vector<uint8_t> r(16 + path_bytes);
  uint16_t type = static_cast<uint16_t>(event.id);
  std::memcpy(r.data(), &type, 2);
  std::memcpy(r.data() + 8, &status, 4);
  uint32_t loc = static_cast<uint32_t>(path_bytes) << 16;  // the path right after its loc word
  std::memcpy(r.data() + 12, &loc, 4);
  std::memcpy(r.data() + 16, path, path_bytes);
  return r;
}

// Arg 0: no filter; 1: a filter the record passes; 2: one it fails.
void BM_DeliverOneInstance(benchmark::State& state) {
  RequestEvent req;
  Event* event = req.event;
  InstanceSet instances(&req.registry);
  Instance& top = instances.top();
  top.buffer().set_overwrite(true);  // a steady state: the oldest entries make room
  instances.SetEnabled(top, event, true);
  if (state.range(0) > 0) top.filters().Write(*event, "status >= 500 && path ~ \"/api/*\"", &top.error_log());
  std::vector<uint8_t> record = Request(*event, state.range(0) == 2 ? 200 : 503, "/api/items/42");
  const EntryMeta meta{1, 100, 100, 0};
  for (auto _ : state) {
    instances.Deliver(*event, meta, record);
    benchmark::ClobberMemory();
  }
  state.SetLabel(state.range(0) == 0 ? "no filter" : state.range(0) == 1 ? "filter passes" : "filter drops");
  instances.SetEnabled(top, event, false);
}
BENCHMARK(BM_DeliverOneInstance)->Arg(0)->Arg(1)->Arg(2);

// Filter::Matches alone: one integer predicate (0), the two-predicate filter
// with a glob (1).
void BM_FilterMatches(benchmark::State& state) {
  RequestEvent req;
  const Event* event = req.event;
  filter::Filter compiled;
  filter::ParseError error;
  const char* text = state.range(0) == 0 ? "status >= 500" : "status >= 500 && path ~ \"/api/*\"";
  if (filter::Compile(text, event->desc.fields, &compiled, &error) != 0) state.SkipWithError("compile");
  std::vector<uint8_t> record = Request(*event, 503, "/api/items/42");
  for (auto _ : state) benchmark::DoNotOptimize(compiled.Matches({record, 0, {}}));
}
BENCHMARK(BM_FilterMatches)->Arg(0)->Arg(1);

// A hist trigger on the event, which is not enabled (soft mode: the record
// fires the trigger and is not copied). Arg 0: `keys=status`; 1: a string key
// and a value; 2: a variable of common_timestamp.usecs, as the start of a latency.
void BM_DeliverHist(benchmark::State& state) {
  RequestEvent req;
  Event* event = req.event;
  InstanceSet instances(&req.registry);
  Instance& top = instances.top();
  const char* triggers[] = {"hist:keys=status", "hist:keys=path:vals=status",
                            "hist:keys=status:ts0=common_timestamp.usecs"};
  if (top.triggers().Write(instances, top, *event, triggers[state.range(0)], true, req.registry) != 0) {
    state.SkipWithError("trigger");
  }
  std::vector<uint8_t> record = Request(*event, 503, "/api/items/42");
  EntryMeta meta{1, 100, 100, 0};
  for (auto _ : state) {
    ++meta.timestamp;
    instances.Deliver(*event, meta, record);
    benchmark::ClobberMemory();
  }
  state.SetLabel(triggers[state.range(0)]);
  top.triggers().Clear(instances, top);
}
BENCHMARK(BM_DeliverHist)->Arg(0)->Arg(1)->Arg(2);

}  // namespace
}  // namespace udiag::service

BENCHMARK_MAIN();
