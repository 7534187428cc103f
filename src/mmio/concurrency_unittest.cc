// Probes under threads: no access lost in the alias designs, and the
// unregister guarantee while other threads keep faulting.
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "mmio/probe_test_support.h"
#include "udiag/mmio.h"

namespace udiag::mmio::testing {
namespace {

constexpr int kThreads = 8;

std::atomic<uint64_t> g_accesses{0};
std::atomic<uint64_t> g_bad_values{0};

// Checks that every store is seen with the value the thread wrote.
void CountingPost(udiag_mmio_probe*, const udiag_mmio_access* access) {
  g_accesses.fetch_add(1, std::memory_order_relaxed);
  if (access->value_valid && access->dir == UDIAG_MMIO_WRITE) {
    uint32_t value;
    memcpy(&value, access->value, sizeof(value));
    if (value != static_cast<uint32_t>(access->tid)) g_bad_values.fetch_add(1, std::memory_order_relaxed);
  }
}

class ConcurrencyTest : public ::testing::TestWithParam<udiag_mmio_mode> {
 protected:
  void SetUp() override {
    ASSERT_NE(pages_.base(), nullptr);
    ASSERT_EQ(udiag_mmio_set_mode(GetParam()), 0);
    g_accesses = 0;
    g_bad_values = 0;
  }
  void TearDown() override { udiag_mmio_set_mode(UDIAG_MMIO_EMULATE); }
  SharedPages pages_{2};
};

// Every thread stores its tid into its own slot of one probed page and loads
// it back; every access must reach the post handler exactly once.
// Design A opens the page for everybody during its step and loses accesses
// by design (bench/mmio shows how many): only the alias designs are counted.
class NoLossTest : public ConcurrencyTest {};

TEST_P(NoLossTest, EightThreadsOnOnePageLoseNoAccess) {
  constexpr int kIterations = 2000;
  auto* slots = reinterpret_cast<volatile uint32_t*>(pages_.page(0));
  udiag_mmio_probe probe{};
  probe.addr = reinterpret_cast<uintptr_t>(pages_.page(0));
  probe.len = kPage;
  probe.post = CountingPost;
  ASSERT_EQ(udiag_mmio_register_probe(&probe), 0);
  std::atomic<int> wrong_loads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      udiag_mmio_thread_init();
      const uint32_t tid = static_cast<uint32_t>(gettid());
      for (int i = 0; i < kIterations; ++i) {
        slots[t * 16] = tid;
        if (slots[t * 16] != tid) wrong_loads.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  udiag_mmio_unregister_probe(&probe);
  EXPECT_EQ(wrong_loads.load(), 0);
  EXPECT_EQ(g_bad_values.load(), 0u);
  EXPECT_EQ(g_accesses.load(), uint64_t{2} * kThreads * kIterations);
}

// Once unregister returns, no handler of the probe runs, while threads keep
// hammering the page through many register/unregister cycles.
std::atomic<bool> g_unregistered{false};
std::atomic<uint64_t> g_late_calls{0};
void PostAfterUnregisterDetector(udiag_mmio_probe*, const udiag_mmio_access*) {
  if (g_unregistered.load()) g_late_calls.fetch_add(1);
  g_accesses.fetch_add(1, std::memory_order_relaxed);
}

class UnregisterRaceTest : public ConcurrencyTest {};

TEST_P(UnregisterRaceTest, NoHandlerRunsAfterUnregisterReturns) {
  constexpr int kCycles = 60;
  auto* word = reinterpret_cast<std::atomic<uint64_t>*>(pages_.page(1));
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      udiag_mmio_thread_init();
      while (!stop.load(std::memory_order_relaxed)) word->fetch_add(1, std::memory_order_relaxed);
    });
  }
  udiag_mmio_probe probe{};
  probe.addr = reinterpret_cast<uintptr_t>(word);
  probe.len = sizeof(*word);
  probe.post = PostAfterUnregisterDetector;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    g_unregistered = false;
    const uint64_t before = g_accesses.load();
    ASSERT_EQ(udiag_mmio_register_probe(&probe), 0);
    // Unregister while the threads are faulting: wait for this cycle's first hit.
    while (g_accesses.load() == before) std::this_thread::yield();
    udiag_mmio_unregister_probe(&probe);
    g_unregistered = true;
  }
  stop = true;
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(g_late_calls.load(), 0u);
  EXPECT_GE(g_accesses.load(), uint64_t{kCycles});
}

std::string ModeName(const ::testing::TestParamInfo<udiag_mmio_mode>& info) {
  switch (info.param) {
    case UDIAG_MMIO_EMULATE: return "Emulate";
    case UDIAG_MMIO_REBASE_STEP: return "RebaseStep";
    case UDIAG_MMIO_SINGLE_STEP: return "SingleStep";
  }
  return "Unknown";
}

INSTANTIATE_TEST_SUITE_P(AliasModes, NoLossTest, ::testing::Values(UDIAG_MMIO_EMULATE, UDIAG_MMIO_REBASE_STEP),
                         ModeName);
INSTANTIATE_TEST_SUITE_P(Modes, UnregisterRaceTest,
                         ::testing::Values(UDIAG_MMIO_EMULATE, UDIAG_MMIO_REBASE_STEP, UDIAG_MMIO_SINGLE_STEP),
                         ModeName);

}  // namespace
}  // namespace udiag::mmio::testing
