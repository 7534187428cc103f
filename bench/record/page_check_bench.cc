// The daemon's work on a producer's page that a recording keeps whole: the
// copy out of the ring and CheckPage's pass over the copy (server_ring_drain.cc),
// for a page of flood_producer's events (32-byte payloads, a few hundred
// ticks apart). Per event, so that it reads against `record_cost.sh`'s
// daemon ns per event; run under `valgrind --tool=callgrind` for a count of
// instructions that machine noise does not move.
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "ring/ring_reader.h"
#include "ring/ring_writer.h"
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

bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// The same work on pages a producer thread on another cpu has just written,
// through RingReader::StagePages, as the daemon drains a busy thread's
// ring: the copy's reads then come from that cpu's cache, which costs most
// of it. In turns, so that only the drain is timed: the producer writes
// 1 MiB of events (the size of its cache's share), then the drain takes
// them into a 4 MiB set of copies (as the file writer lends pages).
// With pause_ms, the drain sleeps that long between the producer's turn and
// its own, as a daemon dozing beside paced producers does (up to 20 ms):
// its cpu then comes back from idle to pages and copies gone cold.
void BM_DrainPagesFromAnotherCpu(benchmark::State& state) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
    state.SkipWithError("needs two cpus");
    return;
  }
  constexpr uint32_t kRingBytes = 4 << 20;
  constexpr uint32_t kTurnBytes = 1 << 20;
  constexpr size_t kCopies = 1024;
  ring::RingMapping mapping{};
  if (ring::CreateRing(kRingBytes, gettid(), ring::ClockDomain::kTsc, &mapping) != 0) {
    state.SkipWithError("CreateRing failed");
    return;
  }
  auto reader = std::move(ring::RingReader::Map(mapping.fd, 0).value());
  ring::RingWriter writer;
  writer.Attach(mapping.base);
  std::atomic<int> turn{0};  // odd: the producer's
  std::atomic<bool> stop{false};
  std::thread producer([&] {
    PinTo(0);
    uint8_t payload[kPayload] = {};
    uint64_t time = 1'000'000;
    for (int seen = 0;;) {
      int now;
      while ((now = turn.load(std::memory_order_acquire)) == seen) {
        if (stop.load(std::memory_order_relaxed)) return;
      }
      for (uint32_t written = 0; written < kTurnBytes; written += 4 + ring::kCommonHeaderBytes + kPayload) {
        time += 300;
        uint8_t* at = writer.Reserve(kPayload, kType, 0, time);
        if (!at) break;
        std::memcpy(at, payload, kPayload);
        writer.Commit();
        ++payload[0];
      }
      seen = now + 1;
      turn.store(seen, std::memory_order_release);
    }
  });
  PinTo(1);
  std::vector<uint8_t> copies(kCopies * ring::kRingPageSize);
  Event event;
  event.id = kType;
  event.desc.min_size = kPayload;
  auto event_of = [&](uint16_t id) -> const Event* { return id == kType ? &event : nullptr; };
  size_t next_copy = 0;
  uint64_t events = 0, refused = 0;
  int seen = 0;
  for (auto _ : state) {
    turn.store(seen + 1, std::memory_order_release);
    while (turn.load(std::memory_order_acquire) != seen + 2) {
    }
    seen += 2;
    std::this_thread::sleep_for(std::chrono::milliseconds(state.range(0)));
    const auto start = std::chrono::steady_clock::now();
    reader->StagePages([&](const ring::RecordHead&, const ring::PayloadSource&) {},
                       [&](const ring::PageHead& head, const ring::PayloadSource& page) {
                         uint8_t* copy = copies.data() + next_copy++ % kCopies * ring::kRingPageSize;
                         page.CopyPageTo(copy);
                         // Ticks as ns, from the page's start (Server::PageLine).
                         const base::TscClock::Line line{head.timestamp, head.timestamp, uint64_t{1} << 32};
                         CheckedPage checked;
                         if (CheckPage(copy, 4242, UINT64_MAX / 2, event_of, line, &checked)) {
                           events += checked.events;
                         } else {
                           ++refused;
                         }
                       },
                       SIZE_MAX, /*hold_open_page=*/true);
    reader->Release();
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  stop = true;
  producer.join();
  if (refused)
    state.SkipWithError(
        ("pages refused: " + std::to_string(refused) + " events " + std::to_string(events)).c_str());
  state.SetItemsProcessed(static_cast<int64_t>(events));
  munmap(mapping.base, mapping.bytes);
  close(mapping.fd);
}
BENCHMARK(BM_DrainPagesFromAnotherCpu)->ArgName("pause_ms")->Arg(0)->Arg(20)->UseManualTime();

}  // namespace
}  // namespace udiag::service

BENCHMARK_MAIN();
