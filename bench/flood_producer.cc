// A producer for the recording benchmarks: one thread writes 32-byte events
// (flood: seq, a, b, c as u64) for N seconds once a consumer enables the
// event — as fast as it can, or at RATE events/s (paced in batches of 1024)
// — then prints "written <n> failed <n>" (failed: the event was disabled
// meanwhile). Events a full ring drops still count as written: the daemon
// reports them lost. Run it under `udiag record -- flood_producer N [RATE]`
// (which sets $UDIAG_DIR).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "udiag/udiag.hpp"

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 10;
  double rate = argc > 2 ? std::atof(argv[2]) : 0;  // 0: unpaced
  udiag::data_file file;
  if (file.error()) {
    std::fprintf(stderr, "flood_producer: no daemon: errno %d\n", file.error());
    return 1;
  }
  udiag::event<uint64_t, uint64_t, uint64_t, uint64_t> flood("flood", {"seq", "a", "b", "c"});
  if (int err = flood.register_on(file)) {
    std::fprintf(stderr, "flood_producer: register: errno %d\n", err);
    return 1;
  }
  using Clock = std::chrono::steady_clock;
  auto give_up = Clock::now() + std::chrono::seconds(5);
  while (!flood.enabled() && Clock::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!flood.enabled()) {
    std::fprintf(stderr, "flood_producer: nobody enabled the event within 5 s\n");
    return 1;
  }
  auto start = Clock::now();
  auto end = start + std::chrono::duration<double>(seconds);
  uint64_t written = 0, failed = 0;
  for (uint64_t seq = 0;; ++seq) {
    if ((seq & 1023) == 0) {
      auto now = Clock::now();
      if (now >= end) break;
      if (rate > 0) {
        auto due = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seq / rate));
        if (due > now) std::this_thread::sleep_until(due);
      }
    }
    if (flood.write(seq, seq * 3, seq * 5, seq * 7) == 0) {
      ++written;
    } else {
      ++failed;
    }
  }
  std::printf("written %llu failed %llu\n", static_cast<unsigned long long>(written),
              static_cast<unsigned long long>(failed));
  return 0;
}
