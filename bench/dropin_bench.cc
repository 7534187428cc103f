// The drop-in path (issue 3): run once plainly and once under
// LD_PRELOAD=libudiag-preload.so by run_bench.sh.
// - BM_PipeWrite: a 32-byte write() to a pipe (a reader thread drains it):
//   what the preload costs unrelated I/O, compared across the two runs.
// - BM_DropinWritev: the kernel ABI (open of user_events_data, ioctl,
//   writev), served by the preload; BM_NativeWritev: udiag_writev() on the
//   same data file, for the ratio. Both skip when not under the preload.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "bench_daemon.h"
#include "udiag/udiag.h"

namespace {

struct Payload {
  uint64_t a, b, c, d;
};

struct Global {
  std::unique_ptr<udiag::bench::BenchDaemon> daemon;
  int data_fd = -1;  // opened through the kernel path
  uint32_t enabled = 0;
  uint32_t index = 0;
  std::string skip;  // why the data-file benchmarks cannot run
};
Global* g = nullptr;

void SetUpDropin() {
  g->data_fd = open("/sys/kernel/tracing/user_events_data", O_RDWR);
  if (g->data_fd < 0) {
    g->skip = std::string("user_events_data: ") + strerror(errno) + " (run under LD_PRELOAD=libudiag-preload.so)";
    return;
  }
  user_reg reg{};
  reg.size = sizeof(reg);
  reg.enable_bit = 0;
  reg.enable_size = 4;
  reg.enable_addr = reinterpret_cast<uintptr_t>(&g->enabled);
  reg.name_args = reinterpret_cast<uintptr_t>("dropin_bench u64 a; u64 b; u64 c; u64 d");
  if (ioctl(g->data_fd, DIAG_IOCSREG, &reg) < 0 || g->daemon->SetEnabled("dropin_bench", true) != 0) {
    g->skip = std::string("register/enable: ") + strerror(errno);
    return;
  }
  g->index = reg.write_index;
}

void BM_PipeWrite(benchmark::State& state) {
  int fds[2];
  if (pipe(fds) != 0) {
    state.SkipWithError("pipe failed");
    return;
  }
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    char buf[65536];
    while (read(fds[0], buf, sizeof(buf)) > 0) {
    }
  });
  Payload p{1, 2, 3, 4};
  for (auto _ : state) benchmark::DoNotOptimize(write(fds[1], &p, sizeof(p)));
  close(fds[1]);
  reader.join();
  close(fds[0]);
}
BENCHMARK(BM_PipeWrite)->Repetitions(5)->ReportAggregatesOnly(true);

template <bool kNative>
void BM_DataFileWritev(benchmark::State& state) {
  if (!g->skip.empty()) {
    state.SkipWithError(g->skip.c_str());
    return;
  }
  Payload p{0, 1, 2, 3};
  iovec iov[2] = {{&g->index, sizeof(g->index)}, {&p, sizeof(p)}};
  for (auto _ : state) {
    if (__atomic_load_n(&g->enabled, __ATOMIC_RELAXED) & 1) {
      benchmark::DoNotOptimize(kNative ? udiag_writev(g->data_fd, iov, 2) : writev(g->data_fd, iov, 2));
    }
    ++p.a;
  }
}
void BM_DropinWritev(benchmark::State& state) { BM_DataFileWritev<false>(state); }
void BM_NativeWritev(benchmark::State& state) { BM_DataFileWritev<true>(state); }
BENCHMARK(BM_DropinWritev)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_NativeWritev)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  // The daemon must not run under the preload this process may have.
  unsetenv("LD_PRELOAD");
  Global global;
  g = &global;
  std::string error;
  global.daemon = udiag::bench::BenchDaemon::Start(&error);
  if (!global.daemon) {
    global.skip = "no daemon: " + error;
  } else {
    SetUpDropin();
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (global.data_fd >= 0) close(global.data_fd);
  return 0;
}
