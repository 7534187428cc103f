// Time stamp counter access for the event fast path, and the clock it is
// converted to (CLOCK_MONOTONIC, see tsc_clock.h).
#pragma once

#include <time.h>
#include <x86intrin.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace udiag::base {

// Reads the TSC and the CPU it was read on. rdtscp (not rdtsc) because it
// also gives the CPU in one instruction and does not run ahead of earlier
// instructions. Linux puts (node << 12) | cpu in TSC_AUX.
inline uint64_t ReadTsc(uint32_t* cpu) {
  unsigned int aux;
  const uint64_t tsc = __rdtscp(&aux);
  *cpu = aux & 0xfff;
  return tsc;
}

// True when the TSC ticks at a constant rate in every P- and C-state and
// rdtscp exists: only then can raw ticks stand for time across CPUs.
inline bool InvariantTscAvailable() {
  static const bool available = [] {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
      if (line.compare(0, 5, "flags") != 0) continue;
      bool constant = false, nonstop = false, rdtscp = false;
      std::istringstream flags(line.substr(line.find(':') + 1));
      std::string flag;
      while (flags >> flag) {
        constant |= flag == "constant_tsc";
        nonstop |= flag == "nonstop_tsc";
        rdtscp |= flag == "rdtscp";
      }
      return constant && nonstop && rdtscp;  // the first CPU speaks for all
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
