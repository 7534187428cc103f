// The Perfetto writer's cost per record, as `udiag record -o x.pftrace`
// pays it for each event of flood_producer's (four u64s: seq, 3, 5 and 7
// times seq; a CLOCK_MONOTONIC of hours): the encoding and the copy into
// the writer thread's blocks, which write to /dev/null.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "record/perfetto/perfetto_writer.h"
#include "schema/event_description.h"

namespace {

using udiag::record::EventType;
using udiag::record::Record;

void BM_PerfettoWriteFlood(benchmark::State& state) {
  udiag::schema::EventDescription flood;
  if (udiag::schema::ParseCommand("flood u64 seq;u64 a;u64 b;u64 c", &flood) != 0) {
    state.SkipWithError("ParseCommand failed");
    return;
  }
  auto writer = udiag::record::OpenPerfettoWriter("/dev/null");
  if (!writer.ok()) {
    state.SkipWithError("OpenPerfettoWriter failed");
    return;
  }
  constexpr uint32_t kId = 7;
  (*writer)->AddEventType(EventType{kId, "user_events", flood.name, flood.fields});
  (*writer)->AddTask({4242, 4242, "flood_producer"});
  std::vector<uint8_t> data(8 + 32);
  const uint16_t id = kId;
  std::memcpy(data.data(), &id, sizeof(id));
  uint64_t seq = 0, time = 10'000'000'000'000;
  for (auto _ : state) {
    const uint64_t values[] = {seq, seq * 3, seq * 5, seq * 7};
    std::memcpy(data.data() + 8, values, sizeof(values));
    (*writer)->Write(Record{time, 4242, 4242, 1, kId, 0, data});
    ++seq;
    time += 25;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_PerfettoWriteFlood);

}  // namespace

BENCHMARK_MAIN();
