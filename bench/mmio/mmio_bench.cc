// Memory-access probe costs (docs/mmio.md, "Performance"). Run:
//   mmio_bench --benchmark_counters_tabular=true
// Per traced access in each design, alone and beside a second thread that
// spins on unrelated work or that also accesses the probed page; `logged`
// is the fraction of all accesses (both threads) that reached the post
// handler: design A loses some while another thread runs, B and B' none.
#include <benchmark/benchmark.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ucontext.h>

#include <atomic>
#include <thread>

#include "mmio/probe_test_support.h"
#include "udiag/mmio.h"

namespace {

using udiag::mmio::testing::SharedPages;

enum Background { kAlone = 0, kSpinning = 1, kFaulting = 2 };

std::atomic<uint64_t> g_logged{0};

void CountPost(udiag_mmio_probe*, const udiag_mmio_access*) { g_logged.fetch_add(1, std::memory_order_relaxed); }

uint32_t LoadOnce(const uint8_t* p) { return *reinterpret_cast<const volatile uint32_t*>(p); }

// A thread running beside the measured one until destroyed.
class BackgroundThread {
 public:
  BackgroundThread(Background kind, uint8_t* probed) {
    if (kind == kAlone) return;
    thread_ = std::thread([this, kind, probed] {
      udiag_mmio_thread_init();
      uint64_t sink = 0;
      while (!stop_.load(std::memory_order_relaxed)) {
        if (kind == kFaulting) {
          sink += LoadOnce(probed);
          accesses_.fetch_add(1, std::memory_order_relaxed);
        } else {
          sink = sink * 6364136223846793005u + 1;
        }
      }
      benchmark::DoNotOptimize(sink);
    });
  }
  ~BackgroundThread() { Stop(); }
  // Stops the thread; returns how many probed accesses it made.
  uint64_t Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return accesses_.load();
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> accesses_{0};
  std::thread thread_;
};

// The kernel's part of a traced access: a load from a PROT_NONE page whose
// SIGSEGV handler only skips the 2-byte `mov (%rdi), %eax`. Runs before any
// probe exists and restores the previous action afterwards.
void SkipFaultingLoad(int, siginfo_t*, void* context) {
  static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP] += 2;
}
void BM_SignalRoundTripFloor(benchmark::State& state) {
  SharedPages pages(1);
  struct sigaction skip{}, previous{};
  skip.sa_sigaction = SkipFaultingLoad;
  skip.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGSEGV, &skip, &previous);
  mprotect(pages.base(), udiag::mmio::testing::kPage, PROT_NONE);
  for (auto _ : state) {
    uint32_t value;
    asm volatile(".byte 0x8b, 0x07" : "=a"(value) : "D"(pages.base()) : "memory");  // mov (%rdi), %eax
    benchmark::DoNotOptimize(value);
  }
  mprotect(pages.base(), udiag::mmio::testing::kPage, PROT_READ | PROT_WRITE);
  sigaction(SIGSEGV, &previous, nullptr);
}
BENCHMARK(BM_SignalRoundTripFloor)->UseRealTime();

// An access to ordinary memory. probes:0 runs first, before this process has
// ever registered a probe (no handler installed): the "process without
// probes" baseline; probes:1 has a probe on another page of the process.
void BM_UnprobedLoad(benchmark::State& state) {
  SharedPages probed(1);
  SharedPages plain(1);
  udiag_mmio_probe probe{};
  probe.addr = reinterpret_cast<uintptr_t>(probed.base());
  probe.len = 8;
  if (state.range(0) != 0 && udiag_mmio_register_probe(&probe) != 0) {
    state.SkipWithError("udiag_mmio_register_probe failed");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(LoadOnce(plain.base() + 64));
  if (state.range(0) != 0) udiag_mmio_unregister_probe(&probe);
}
BENCHMARK(BM_UnprobedLoad)->ArgName("probes")->Arg(0)->Arg(1);

// range(0): udiag_mmio_mode, range(1): Background, range(2): 1 for stores.
void BM_TracedAccess(benchmark::State& state) {
  if (udiag_mmio_set_mode(static_cast<udiag_mmio_mode>(state.range(0))) != 0) {
    state.SkipWithError("udiag_mmio_set_mode failed");
    return;
  }
  SharedPages pages(1);
  udiag_mmio_probe probe{};
  probe.addr = reinterpret_cast<uintptr_t>(pages.base());
  probe.len = udiag::mmio::testing::kPage;
  probe.post = CountPost;
  if (udiag_mmio_register_probe(&probe) != 0) {
    state.SkipWithError("udiag_mmio_register_probe failed");
    return;
  }
  const bool stores = state.range(2) != 0;
  uint64_t own = 0;
  g_logged = 0;
  BackgroundThread background(static_cast<Background>(state.range(1)), pages.base() + 2048);
  {
    uint8_t* target = pages.base() + 64;
    for (auto _ : state) {
      if (stores) {
        *reinterpret_cast<volatile uint32_t*>(target) = static_cast<uint32_t>(own);
      } else {
        benchmark::DoNotOptimize(LoadOnce(target));
      }
      ++own;
    }
  }
  const uint64_t other = background.Stop();
  udiag_mmio_unregister_probe(&probe);
  udiag_mmio_set_mode(UDIAG_MMIO_EMULATE);
  state.counters["logged"] = static_cast<double>(g_logged.load()) / static_cast<double>(own + other);
  state.counters["other_accesses"] = static_cast<double>(other);
}
BENCHMARK(BM_TracedAccess)
    ->ArgNames({"mode", "background", "store"})
    ->ArgsProduct({{UDIAG_MMIO_EMULATE, UDIAG_MMIO_REBASE_STEP, UDIAG_MMIO_SINGLE_STEP},
                   {kAlone, kSpinning, kFaulting},
                   {0}})
    ->ArgsProduct({{UDIAG_MMIO_EMULATE, UDIAG_MMIO_REBASE_STEP, UDIAG_MMIO_SINGLE_STEP}, {kAlone}, {1}})
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
