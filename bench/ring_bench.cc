// Cost of one enabled event on the producer side, against the floor of
// DESIGN.md (rdtsc + 44-byte copy into a ring + release store: 11.4 ns).
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <sys/mman.h>
#include <unistd.h>
#include <x86intrin.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "base/tsc.h"
#include "ring/ring_reader.h"
#include "ring/ring_writer.h"

namespace udiag::ring {
namespace {

constexpr uint32_t kRingBytes = 1 << 20;

// Drains a ring on its own thread: every `poll` like udiagd while producers
// are active (50 us), or as fast as it can (zero: the worst case for the
// producer, whose cache lines then move to the other core record by record).
class Consumer {
 public:
  Consumer(int fd, std::chrono::microseconds poll)
      : reader_(std::move(RingReader::Map(fd, base::MonotonicNs()).value())) {
    thread_ = std::thread([this, poll] {
      uint64_t sum = 0;
      while (!stop_.load(std::memory_order_relaxed)) {
        const size_t n =
            reader_->Drain([&](const RecordView& r) { sum += r.payload[0]; }, SIZE_MAX);
        records_ += n;
        if (poll.count() != 0) {
          std::this_thread::sleep_for(poll);
        } else if (n == 0) {
          for (int i = 0; i < 256; ++i) _mm_pause();
        }
      }
      benchmark::DoNotOptimize(sum);
    });
  }
  ~Consumer() {
    stop_.store(true);
    thread_.join();
  }
  uint64_t records() const { return records_; }

 private:
  std::unique_ptr<RingReader> reader_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> records_{0};
  std::thread thread_;
};

// A ring for one benchmark, unmapped and closed on the way out.
struct BenchRing {
  RingMapping mapping{-1, nullptr, 0};
  RingWriter writer;
  explicit BenchRing(benchmark::State& state, uint32_t bytes = kRingBytes) {
    if (CreateRing(bytes, gettid(), ClockDomain::kTsc, &mapping) != 0) {
      state.SkipWithError("CreateRing failed");
      return;
    }
    writer.Attach(mapping.base);
  }
  ~BenchRing() {
    if (!mapping.base) return;
    munmap(mapping.base, mapping.bytes);
    close(mapping.fd);
  }
  RingHeader* header() const { return static_cast<RingHeader*>(mapping.base); }
  // The stamp, the reservation and the 32-byte copy; nullptr when full.
  uint8_t* Write32(const uint8_t* payload) {
    uint32_t cpu;
    const uint64_t tsc = base::ReadTsc(&cpu);
    uint8_t* p = writer.Reserve(32, 1, static_cast<uint16_t>(cpu), tsc);
    if (p != nullptr) [[likely]] {
      std::memcpy(p, payload, 32);
      writer.Commit();
    }
    return p;
  }
};

// Reserve + 32-byte payload + Commit, stamped with ReadTsc, into a ring of
// state.range(1) KiB while a consumer thread drains every state.range(0)
// microseconds.
void BM_RingWrite32(benchmark::State& state) {
  BenchRing ring(state, static_cast<uint32_t>(state.range(1)) * 1024);
  if (!ring.mapping.base) return;
  uint64_t lost = 0;
  {
    Consumer consumer(ring.mapping.fd, std::chrono::microseconds(state.range(0)));
    uint8_t payload[32];
    std::memset(payload, 0x5a, sizeof(payload));
    for (auto _ : state) ring.Write32(payload);
    lost = ring.header()->lost.load();
  }
  state.counters["lost_ratio"] =
      benchmark::Counter(static_cast<double>(lost) / static_cast<double>(state.iterations()));
}
// A ring of 1 MiB fits in the L2 of the machines measured so far; udiagd
// gives each thread 4 MiB and a thread whose ring overflowed up to 16 MiB.
BENCHMARK(BM_RingWrite32)->ArgNames({"poll_us", "ring_kb"})->Args({50, 1024})->Args({0, 1024});
BENCHMARK(BM_RingWrite32)->ArgNames({"poll_us", "ring_kb"})->Args({50, 4096})->Args({50, 16384});

// The same write with no consumer thread: when the ring is full the loop
// frees it at once (once per 23552 records: 92 events of 44 bytes to a
// page, 256 pages), so this is the producer's own cost without the cache
// lines travelling to a consumer core.
void BM_RingWrite32Alone(benchmark::State& state) {
  BenchRing ring(state);
  if (!ring.mapping.base) return;
  uint8_t payload[32];
  std::memset(payload, 0x5a, sizeof(payload));
  for (auto _ : state) {
    if (ring.Write32(payload) == nullptr) [[unlikely]] {
      ring.header()->tail.store(ring.header()->head.load());
      ring.Write32(payload);
    }
  }
}
BENCHMARK(BM_RingWrite32Alone);

// The floor: a timestamp, a 44-byte copy into a ring and a release store of
// its head, nothing else.
template <bool kRdtscp>
void BM_Floor(benchmark::State& state) {
  struct Ring {
    alignas(64) uint8_t data[kRingBytes];
    alignas(64) std::atomic<uint64_t> head{0};
  };
  auto ring = std::make_unique<Ring>();
  uint8_t payload[36];
  std::memset(payload, 0x5a, sizeof(payload));
  uint64_t head = 0;
  for (auto _ : state) {
    unsigned int aux;
    const uint64_t tsc = kRdtscp ? __rdtscp(&aux) : __rdtsc();
    uint8_t* p = ring->data + (head & (kRingBytes - 1));
    std::memcpy(p, &tsc, sizeof(tsc));
    std::memcpy(p + sizeof(tsc), payload, sizeof(payload));
    head += 48;
    ring->head.store(head, std::memory_order_release);
  }
}
BENCHMARK(BM_Floor<false>)->Name("BM_Floor/rdtsc");
BENCHMARK(BM_Floor<true>)->Name("BM_Floor/rdtscp");

// The timestamp alone: on a VM whose rdtsc costs most of the floor, what
// any write that stamps its event pays before it does anything else.
void BM_Rdtsc(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(__rdtsc());
}
BENCHMARK(BM_Rdtsc);

// Daemon side: copy-out, checks and hand-out of one 32-byte record.
void BM_RingDrain32(benchmark::State& state) {
  RingMapping mapping{-1, nullptr, 0};
  if (CreateRing(kRingBytes, gettid(), ClockDomain::kTsc, &mapping) != 0) {
    state.SkipWithError("CreateRing failed");
    return;
  }
  auto reader = std::move(RingReader::Map(mapping.fd, base::MonotonicNs()).value());
  RingWriter writer;
  writer.Attach(mapping.base);
  uint64_t sum = 0, records = 0;
  for (auto _ : state) {
    state.PauseTiming();
    while (uint8_t* p = writer.Reserve(32, 1, 0, 0)) {
      std::memset(p, 1, 32);
      writer.Commit();
    }
    state.ResumeTiming();
    records += reader->Drain([&](const RecordView& r) { sum += r.payload[0]; }, SIZE_MAX);
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(static_cast<int64_t>(records));
  munmap(mapping.base, mapping.bytes);
  close(mapping.fd);
}
BENCHMARK(BM_RingDrain32);

// One cache line handed to another thread and back: what a line the
// producer writes and the consumer reads costs to move. A machine's own
// number, not udiag's: on the reference VM it flips within seconds between
// about 90 ns and 250-900 ns (the host moves the virtual cpus), and the
// ring's write with a consumer beside it flips with it (docs/performance-history.md).
void BM_CacheLineRoundTrip(benchmark::State& state) {
  alignas(64) static std::atomic<uint64_t> line{0};
  static std::atomic<bool> stop{false};
  line.store(0);
  stop.store(false);
  std::thread partner([] {
    uint64_t expect = 1;
    while (!stop.load(std::memory_order_relaxed)) {
      if (line.load(std::memory_order_acquire) == expect) {
        line.store(expect + 1, std::memory_order_release);
        expect += 2;
      } else {
        _mm_pause();
      }
    }
  });
  uint64_t next = 1;
  for (auto _ : state) {
    line.store(next, std::memory_order_release);
    for (int spins = 0; line.load(std::memory_order_acquire) != next + 1; ++spins) {
      if (spins > 1'000'000) std::this_thread::yield();  // one cpu only: let the partner run
      _mm_pause();
    }
    next += 2;
  }
  stop.store(true);
  partner.join();
}
BENCHMARK(BM_CacheLineRoundTrip);

}  // namespace
}  // namespace udiag::ring

BENCHMARK_MAIN();
