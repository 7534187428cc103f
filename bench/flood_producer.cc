// A producer for the recording benchmarks: one thread writes 32-byte events
// (flood: seq, a, b, c as u64) as fast as it can for N seconds once a
// consumer enables the event, then prints "written <n> failed <n>" (failed:
// the event was disabled meanwhile). Events a full ring drops still count as
// written: the daemon reports them lost. Run it under
// `udiag record -- flood_producer N` (which sets $UDIAG_DIR).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "udiag/udiag.hpp"

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 10;
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
  auto end = Clock::now() + std::chrono::duration<double>(seconds);
  uint64_t written = 0, failed = 0;
  for (uint64_t seq = 0;; ++seq) {
    if ((seq & 4095) == 0 && Clock::now() >= end) break;
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
