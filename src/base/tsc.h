// Time stamp counter access for the event fast path, and the clock it is
// converted to (CLOCK_MONOTONIC, see tsc_clock.h).
#pragma once

#include <sched.h>
#include <sys/rseq.h>
#include <time.h>
#include <x86intrin.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace udiag::base {

// The CPU this thread runs on: one load from the rseq area the kernel keeps
// current for glibc; sched_getcpu() where rseq is not registered.
[[gnu::always_inline]] inline uint32_t CurrentCpu() {
  if (__rseq_size == 0) [[unlikely]] return static_cast<uint32_t>(sched_getcpu());
  auto* area = reinterpret_cast<const volatile rseq*>(static_cast<const char*>(__builtin_thread_pointer()) +
                                                      __rseq_offset);
  return area->cpu_id;
}

// Reads the TSC and the CPU. rdtsc plus the rseq CPU, not rdtscp: on this
// kind of VM rdtscp costs ~10 ns more, and a timestamp may run a few
// instructions ahead of the event it stamps without harm.
[[gnu::always_inline]] inline uint64_t ReadTsc(uint32_t* cpu) {
  *cpu = CurrentCpu();
  return __rdtsc();
}

// True when the TSC ticks at a constant rate in every P- and C-state: only
// then can raw ticks stand for time across CPUs.
inline bool InvariantTscAvailable() {
  static const bool available = [] {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
      if (line.compare(0, 5, "flags") != 0) continue;
      bool constant = false, nonstop = false;
      std::istringstream flags(line.substr(line.find(':') + 1));
      std::string flag;
      while (flags >> flag) {
        constant |= flag == "constant_tsc";
        nonstop |= flag == "nonstop_tsc";
      }
      return constant && nonstop;  // the first CPU speaks for all
    }
    return false;
  }();
  return available;
}

inline uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace udiag::base
