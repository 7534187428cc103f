// Writes events counted{seq = 0..N-1} for the recording tests, once some
// consumer enables the event (at most 5 s wait), then exits. With PAUSE_US,
// it sleeps that long after every 1000 events, so that a test can keep the
// rate below what the daemon drains (no ring losses). With GO_FILE, once
// enabled it creates GO_FILE.ready and writes only when GO_FILE exists (at
// most 10 s wait): the test can act between registration and the first
// write, which creates the thread's ring. Once it has written them all, it
// creates GO_FILE.done (the exit that follows may wait for the daemon).
// Usage: counting_producer N [PAUSE_US [GO_FILE]]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "udiag/udiag.hpp"

int main(int argc, char** argv) {
  long count = argc > 1 ? std::atol(argv[1]) : 1000;
  long pause_us = argc > 2 ? std::atol(argv[2]) : 0;
  udiag::data_file file;
  udiag::event<uint64_t> counted("counted", {"seq"});
  if (file.error() || counted.register_on(file)) {
    std::fprintf(stderr, "counting_producer: cannot register\n");
    return 1;
  }
  for (int i = 0; i < 5000 && !counted.enabled(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (argc > 3) {
    const std::string go = argv[3];
    std::ofstream(go + ".ready").put('\n');
    for (int i = 0; i < 10000 && !std::filesystem::exists(go); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (long seq = 0; seq < count; ++seq) {
    if (int err = counted.write(static_cast<uint64_t>(seq))) {
      std::fprintf(stderr, "counting_producer: write %ld: errno %d\n", seq, err);
      return 1;
    }
    if (pause_us && seq % 1000 == 999) std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
  }
  if (argc > 3) std::ofstream(std::string(argv[3]) + ".done").put('\n');
  return 0;
}
