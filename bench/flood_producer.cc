// A producer for the recording benchmarks: one thread writes 32-byte events
// (flood: seq, a, b, c as u64) for N seconds once a consumer enables the
// event — as fast as it can, or at RATE events/s (paced in batches of 1024)
// — then prints "written <n> failed <n>" (failed: the event was disabled
// meanwhile). Events a full ring drops still count as written: the daemon
// reports them lost. Run it under `udiag record -- flood_producer N [RATE]`
// (which sets $UDIAG_DIR). lttng_flood_producer is its LTTng-UST twin.
#include <cstdio>
#include <cstdlib>

#include "flood_loop.h"
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
  return udiag::bench::RunFlood(
      "flood_producer", seconds, rate, [&] { return flood.enabled(); },
      [&](uint64_t seq) { return flood.write(seq, seq * 3, seq * 5, seq * 7) == 0; });
}
