// Per-event cost of the public udiag API against its peers (DESIGN.md's
// numbers table): the disabled check, an enabled write through the C and C++
// APIs, and the kernel paths udiag replaces (a writev syscall, a Unix
// SOCK_SEQPACKET, tracefs trace_marker_raw).
//
// The process starts its own udiagd (PrivateDaemon, via bench_daemon.h) before any benchmark runs
// and points $UDIAG_DIR at it. Nobody reads the daemon's trace buffer, so it
// fills and then overwrites; that does not change the producer's per-write
// cost, which is what is measured. Performance is reported, never asserted.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "bench_daemon.h"
#include "udiag/udiag.h"
#include "udiag/udiag.hpp"

namespace {

using udiag::bench::BenchDaemon;

constexpr uint8_t kBit = 0;
constexpr char kDisabledName[] = "bench_disabled";
constexpr char kCName[] = "bench_c";
constexpr char kCOtherName[] = "bench_c_other";
constexpr char kCppName[] = "bench_cpp";
constexpr char kCppStringName[] = "bench_cpp_string";
constexpr char kFields[] = " u64 a; u64 b; u64 c; u64 d";

struct Payload {
  uint64_t a, b, c, d;
};
static_assert(sizeof(Payload) == 32);

// Everything the benchmarks share; set up once in main().
struct Global {
  std::unique_ptr<BenchDaemon> daemon;
  int data_fd = -1;
  alignas(8) uint32_t disabled_word = 0;
  uint32_t disabled_index = 0;
  alignas(8) uint32_t c_word = 0;
  uint32_t c_index = 0;
  alignas(8) uint32_t c_other_word = 0;
  uint32_t c_other_index = 0;
  std::optional<udiag::data_file> cpp_file;
  std::optional<udiag::event<uint64_t, uint64_t, uint64_t, uint64_t>> cpp_event;
  std::optional<udiag::event<uint32_t, udiag::rel_string>> cpp_string_event;
  std::string setup_error;  // non-empty: the udiag benchmarks skip with this
};
Global* g = nullptr;

bool WaitForWord(const uint32_t* word, uint32_t mask, bool set) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (((__atomic_load_n(word, __ATOMIC_ACQUIRE) & mask) != 0) == set) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return false;
}

int Register(int fd, const std::string& command, uint32_t* word, uint32_t* index) {
  user_reg reg{};
  reg.size = sizeof(reg);
  reg.enable_bit = kBit;
  reg.enable_size = 4;
  reg.enable_addr = reinterpret_cast<uintptr_t>(word);
  reg.name_args = reinterpret_cast<uintptr_t>(command.c_str());
  if (udiag_ioctl(fd, DIAG_IOCSREG, &reg) < 0) return errno;
  *index = reg.write_index;
  return 0;
}

std::string Enable(const char* name) {
  int err = g->daemon->SetEnabled(name, true);
  return err == 0 ? "" : std::string("enabling ") + name + ": " + std::strerror(err);
}

std::string SetUp() {
  std::string error;
  g->daemon = BenchDaemon::Start(&error);
  if (!g->daemon) return error;

  g->data_fd = udiag_open();
  if (g->data_fd < 0) return std::string("udiag_open: ") + std::strerror(errno);
  if (int err = Register(g->data_fd, std::string(kDisabledName) + kFields, &g->disabled_word, &g->disabled_index))
    return std::string("register ") + kDisabledName + ": " + std::strerror(err);
  if (int err = Register(g->data_fd, std::string(kCName) + kFields, &g->c_word, &g->c_index))
    return std::string("register ") + kCName + ": " + std::strerror(err);
  if (int err = Register(g->data_fd, std::string(kCOtherName) + kFields, &g->c_other_word, &g->c_other_index))
    return std::string("register ") + kCOtherName + ": " + std::strerror(err);

  g->cpp_file.emplace();
  if (g->cpp_file->error()) return std::string("udiag_open (C++): ") + std::strerror(g->cpp_file->error());
  g->cpp_event.emplace(kCppName, std::array<std::string_view, 4>{"a", "b", "c", "d"});
  if (int err = g->cpp_event->register_on(*g->cpp_file))
    return std::string("register ") + kCppName + ": " + std::strerror(err);
  g->cpp_string_event.emplace(kCppStringName, std::array<std::string_view, 2>{"status", "path"});
  if (int err = g->cpp_string_event->register_on(*g->cpp_file))
    return std::string("register ") + kCppStringName + ": " + std::strerror(err);

  for (const char* name : {kCName, kCOtherName, kCppName, kCppStringName}) {
    if (std::string e = Enable(name); !e.empty()) return e;
  }
  if (!WaitForWord(&g->c_word, 1u << kBit, true) || !WaitForWord(&g->c_other_word, 1u << kBit, true))
    return "enable bits of the C events did not flip within 5 s";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!g->cpp_event->enabled() || !g->cpp_string_event->enabled()) {
    if (std::chrono::steady_clock::now() > deadline)
      return "the C++ events did not become enabled within 5 s";
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return "";
}

bool SkipIfNoDaemon(benchmark::State& state) {
  if (g->setup_error.empty()) return false;
  state.SkipWithError(g->setup_error.c_str());
  return true;
}

// A registered event nobody traces: one load of the enable word and a branch.
void BM_DisabledCheck(benchmark::State& state) {
  if (SkipIfNoDaemon(state)) return;
  uint64_t taken = 0;
  for (auto _ : state) {
    uint32_t word = __atomic_load_n(&g->disabled_word, __ATOMIC_RELAXED);
    benchmark::DoNotOptimize(word);
    if (word & (1u << kBit)) ++taken;
  }
  benchmark::DoNotOptimize(taken);
}
BENCHMARK(BM_DisabledCheck)->Repetitions(5)->ReportAggregatesOnly(true);

// The same loop on a word nobody registered: what a load and a branch cost
// in this harness, so the disabled check is compared like for like.
void BM_LoadBranchFloor(benchmark::State& state) {
  static uint32_t plain_word = 0;
  uint64_t taken = 0;
  for (auto _ : state) {
    uint32_t word = __atomic_load_n(&plain_word, __ATOMIC_RELAXED);
    benchmark::DoNotOptimize(word);
    if (word & (1u << kBit)) ++taken;
  }
  benchmark::DoNotOptimize(taken);
}
BENCHMARK(BM_LoadBranchFloor)->Repetitions(5)->ReportAggregatesOnly(true);

// The enable check + udiag_writev of [write_index][32-byte payload].
void BM_EnabledWriteC(benchmark::State& state) {
  if (SkipIfNoDaemon(state)) return;
  Payload p{0, 1, 2, 3};
  iovec iov[2] = {{&g->c_index, sizeof(g->c_index)}, {&p, sizeof(p)}};
  uint64_t failed = 0;
  int last_errno = 0;
  for (auto _ : state) {
    if (__atomic_load_n(&g->c_word, __ATOMIC_RELAXED) & (1u << kBit)) {
      if (udiag_writev(g->data_fd, iov, 2) < 0) {
        ++failed;
        last_errno = errno;
      }
    }
    ++p.a;
  }
  if (failed) state.SkipWithError((std::string("udiag_writev failed: ") + std::strerror(last_errno)).c_str());
}
BENCHMARK(BM_EnabledWriteC)->Repetitions(5)->ReportAggregatesOnly(true);

// Two events written in turn, as a program tracing several things does:
// bench_c, bench_c_other, bench_c, ...
void BM_EnabledWriteCInTurn(benchmark::State& state) {
  if (SkipIfNoDaemon(state)) return;
  Payload p{0, 1, 2, 3};
  iovec iov[2][2] = {{{&g->c_index, sizeof(g->c_index)}, {&p, sizeof(p)}},
                     {{&g->c_other_index, sizeof(g->c_other_index)}, {&p, sizeof(p)}}};
  const uint32_t* words[2] = {&g->c_word, &g->c_other_word};
  uint64_t failed = 0;
  int last_errno = 0;
  for (auto _ : state) {
    const unsigned which = p.a & 1;
    if (__atomic_load_n(words[which], __ATOMIC_RELAXED) & (1u << kBit)) {
      if (udiag_writev(g->data_fd, iov[which], 2) < 0) {
        ++failed;
        last_errno = errno;
      }
    }
    ++p.a;
  }
  if (failed) state.SkipWithError((std::string("udiag_writev failed: ") + std::strerror(last_errno)).c_str());
}
BENCHMARK(BM_EnabledWriteCInTurn)->Repetitions(5)->ReportAggregatesOnly(true);

// The typed C++ layer: enabled() + event<u64,u64,u64,u64>::write().
void BM_EnabledWriteCpp(benchmark::State& state) {
  if (SkipIfNoDaemon(state)) return;
  auto& ev = *g->cpp_event;
  uint64_t i = 0, failed = 0;
  int last_err = 0;
  for (auto _ : state) {
    if (ev.enabled()) {
      if (int err = ev.write(i, i + 1, i + 2, i + 3)) {
        ++failed;
        last_err = err;
      }
    }
    ++i;
  }
  if (failed) state.SkipWithError((std::string("event::write failed: ") + std::strerror(last_err)).c_str());
}
BENCHMARK(BM_EnabledWriteCpp)->Repetitions(5)->ReportAggregatesOnly(true);

// An event with a string, the README's own example: event<u32, rel_string>
// ::write(200, "/index.html"), three iovecs with a __rel_loc word.
void BM_EnabledWriteCppString(benchmark::State& state) {
  if (SkipIfNoDaemon(state)) return;
  auto& ev = *g->cpp_string_event;
  uint32_t status = 200, failed = 0;
  int last_err = 0;
  for (auto _ : state) {
    if (ev.enabled()) {
      if (int err = ev.write(status, "/index.html")) {
        ++failed;
        last_err = err;
      }
    }
    ++status;
  }
  if (failed) state.SkipWithError((std::string("event::write failed: ") + std::strerror(last_err)).c_str());
}
BENCHMARK(BM_EnabledWriteCppString)->Repetitions(5)->ReportAggregatesOnly(true);

// Syscall floor: writev of the same 36 bytes to /dev/null.
void BM_WritevDevNull(benchmark::State& state) {
  int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    state.SkipWithError("cannot open /dev/null");
    return;
  }
  uint32_t index = 0;
  Payload p{0, 1, 2, 3};
  iovec iov[2] = {{&index, sizeof(index)}, {&p, sizeof(p)}};
  for (auto _ : state) {
    benchmark::DoNotOptimize(writev(fd, iov, 2));
    ++p.a;
  }
  close(fd);
}
BENCHMARK(BM_WritevDevNull)->Repetitions(5)->ReportAggregatesOnly(true);

// writev to a Unix SOCK_SEQPACKET while a thread reads every message.
void BM_WritevUnixSocket(benchmark::State& state) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    state.SkipWithError("socketpair(SOCK_SEQPACKET) failed");
    return;
  }
  std::atomic<uint64_t> received{0};
  std::thread reader([&] {
    char buf[256];
    uint64_t n = 0;
    while (read(sv[1], buf, sizeof(buf)) > 0) ++n;
    received = n;
  });
  uint32_t index = 0;
  Payload p{0, 1, 2, 3};
  iovec iov[2] = {{&index, sizeof(index)}, {&p, sizeof(p)}};
  uint64_t failed = 0;
  for (auto _ : state) {
    if (writev(sv[0], iov, 2) < 0) ++failed;
    ++p.a;
  }
  shutdown(sv[0], SHUT_WR);
  reader.join();
  close(sv[0]);
  close(sv[1]);
  if (failed) state.SkipWithError("writev to the socket failed");
}
BENCHMARK(BM_WritevUnixSocket)->Repetitions(5)->ReportAggregatesOnly(true)->UseRealTime();

// The kernel's nearest write path: trace_marker_raw ([u32 id][payload]).
void BM_TraceMarkerRaw(benchmark::State& state) {
  const char* path = "/sys/kernel/tracing/trace_marker_raw";
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    state.SkipWithError((std::string("tracefs not writable: ") + path + ": " + std::strerror(errno)).c_str());
    return;
  }
  uint32_t id = 1;
  Payload p{0, 1, 2, 3};
  iovec iov[2] = {{&id, sizeof(id)}, {&p, sizeof(p)}};
  uint64_t failed = 0;
  int last_errno = 0;
  for (auto _ : state) {
    if (writev(fd, iov, 2) < 0) {
      ++failed;
      last_errno = errno;
    }
    ++p.a;
  }
  close(fd);
  if (failed) state.SkipWithError((std::string("writev to trace_marker_raw: ") + std::strerror(last_errno)).c_str());
}
BENCHMARK(BM_TraceMarkerRaw)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  Global global;
  g = &global;
  global.setup_error = SetUp();
  if (!global.setup_error.empty()) std::fprintf(stderr, "udiag_bench: %s\n", global.setup_error.c_str());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  global.cpp_event.reset();
  global.cpp_file.reset();
  if (global.data_fd >= 0) udiag_close(global.data_fd);
  global.daemon.reset();
  g = nullptr;
  return 0;
}
