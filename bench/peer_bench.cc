// LTTng-UST peer for udiag_bench: one tracepoint with a 32-byte payload.
// Whether it is enabled depends on the lttng session around the run:
// run_bench.sh runs this once with no session (disabled) and once inside a
// recording session with `lttng enable-event -u 'udiag_bench:*'` (enabled).
#include <benchmark/benchmark.h>

#include <cstdint>

#include "lttng_tp.h"

namespace {

// The tracepoint() macro: a load + branch when disabled, the probe when
// enabled. The label says which one this run measured.
void BM_LttngTracepoint(benchmark::State& state) {
  uint64_t i = 0;
  for (auto _ : state) {
    tracepoint(udiag_bench, payload32, i, i + 1, i + 2, i + 3);
    ++i;
  }
  state.SetLabel(tracepoint_enabled(udiag_bench, payload32) ? "enabled" : "disabled");
  state.counters["enabled"] = tracepoint_enabled(udiag_bench, payload32) ? 1 : 0;
}
BENCHMARK(BM_LttngTracepoint)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
