// Trace timestamps as ftrace prints them: seconds and microseconds, the
// nanoseconds rounded to the nearest microsecond (the kernel's ns2usecs adds
// 500 ns before dividing, and trace-cmd report does the same).
#pragma once

#include <cstdint>

namespace udiag::schema {

struct SecondsMicros {
  uint64_t seconds;
  uint32_t micros;  // 0..999999
};

inline SecondsMicros RoundToMicros(uint64_t ns) {
  uint64_t us = ns / 1000 + (ns % 1000 >= 500 ? 1 : 0);  // no overflow near UINT64_MAX
  return {us / 1'000'000, static_cast<uint32_t>(us % 1'000'000)};
}

}  // namespace udiag::schema
