// flood_producer's LTTng-UST twin, for the side-by-side recording table:
// one thread fires udiag_bench:payload32 (the same four u64) for N seconds
// once an lttng session enables it, as fast as it can or at RATE events/s,
// then prints "written <n> failed 0". Events the session's full sub-buffers
// discard still count as written: `lttng stop` reports them discarded.
#include <cstdlib>

#include "flood_loop.h"
#include "lttng_tp.h"

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 10;
  double rate = argc > 2 ? std::atof(argv[2]) : 0;  // 0: unpaced
  return udiag::bench::RunFlood(
      "lttng_flood_producer", seconds, rate, [] { return tracepoint_enabled(udiag_bench, payload32) != 0; },
      [](uint64_t seq) {
        tracepoint(udiag_bench, payload32, seq, seq * 3, seq * 5, seq * 7);
        return true;
      });
}
