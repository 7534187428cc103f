// The daemon's work on a producer's page that a recording keeps whole: the
// copy out of the ring and CheckPage's pass over the copy (server_ring_drain.cc),
// for a page of flood_producer's events (32-byte payloads, a few hundred
// ticks apart). Per event, so that it reads against `record_cost.sh`'s
// daemon ns per event; run under `valgrind --tool=callgrind` for a count of
// instructions that machine noise does not move.
#include <benchmark/benchmark.h>

#include <array>
#include <cstring>

#include "service/event_registry.h"
#include "service/page_check.h"

namespace udiag::service {
namespace {

constexpr uint16_t kType = 10;
constexpr uint32_t kPayload = 32;

// A full page as a ring writer fills it (ring_layout.h).
struct ProducerPage {
  alignas(64) std::array<uint8_t, ring::kRingPageSize> bytes{};
  uint32_t events = 0;

  explicit ProducerPage(uint64_t start) {
    const ring::PageHeader header{start, 0};
    std::memcpy(bytes.data(), &header, sizeof(header));
    constexpr uint32_t data = ring::kCommonHeaderBytes + kPayload;
    uint32_t used = 0;
    for (; used + 4 + data <= ring::kPageRoom - 8; used += 4 + data, ++events) {
      uint8_t* at = bytes.data() + sizeof(header) + used;
      const uint32_t word = data / 4 | uint32_t{300 + events % 7} << ring::kTypeLenBits;
      std::memcpy(at, &word, 4);
      const uint32_t common = kType;
      std::memcpy(at + 4, &common, 4);
      std::memset(at + 8, 0, 4);
      for (uint32_t i = 0; i < kPayload; ++i) at[12 + i] = static_cast<uint8_t>(events + i);
    }
    uint64_t commit = used;
    std::memcpy(bytes.data() + 8, &commit, sizeof(commit));
  }
};

void BM_CopyAndCheckPage(benchmark::State& state) {
  const ProducerPage source(1'000'000);
  alignas(64) std::array<uint8_t, ring::kRingPageSize> copy;
  Event event;
  event.id = kType;
  event.desc.min_size = kPayload;
  auto event_of = [&](uint16_t id) -> const Event* { return id == kType ? &event : nullptr; };
  // 0.4 ns per tick, from the page's start.
  const base::TscClock::Line line{1'000'000, 5'000'000, (uint64_t{2} << 32) / 5};
  CheckedPage checked;
  for (auto _ : state) {
    std::memcpy(copy.data(), source.bytes.data(), copy.size());
    benchmark::DoNotOptimize(copy.data());
    if (!CheckPage(copy.data(), 4242, UINT64_MAX / 2, event_of, line, &checked)) state.SkipWithError("refused");
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * source.events);
}
BENCHMARK(BM_CopyAndCheckPage);

}  // namespace
}  // namespace udiag::service

BENCHMARK_MAIN();
