// The write loop shared by the recording benchmarks' flood producers (udiag
// and LTTng-UST): waits up to 5 s for the event to be enabled, then calls
// write(seq) for `seconds` — as fast as it can, or paced at `rate` events/s
// in batches of 1024 — and prints "written <n> failed <n>" on stdout.
// Returns the process exit status.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>

namespace udiag::bench {

// `enabled()` says whether a consumer enabled the event; `write(seq)`
// returns true when the event was written (or dropped by a full buffer,
// which the tracer counts as lost), false when it was refused.
template <typename Enabled, typename Write>
int RunFlood(const char* name, double seconds, double rate, Enabled enabled, Write write) {
  using Clock = std::chrono::steady_clock;
  const auto give_up = Clock::now() + std::chrono::seconds(5);
  while (!enabled() && Clock::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!enabled()) {
    std::fprintf(stderr, "%s: nobody enabled the event within 5 s\n", name);
    return 1;
  }
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  uint64_t written = 0, failed = 0;
  for (uint64_t seq = 0;; ++seq) {
    if ((seq & 1023) == 0) {
      const auto now = Clock::now();
      if (now >= end) break;
      if (rate > 0) {
        const auto due = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seq / rate));
        if (due > now) std::this_thread::sleep_until(due);
      }
    }
    if (write(seq)) {
      ++written;
    } else {
      ++failed;
    }
  }
  std::printf("written %llu failed %llu\n", static_cast<unsigned long long>(written),
              static_cast<unsigned long long>(failed));
  return 0;
}

}  // namespace udiag::bench
