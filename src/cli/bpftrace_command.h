// `udiag bpftrace`: runs the real bpftrace on user events, through udiagd's
// USDT probe (service/event_probe.h). See docs/bpf.md.
#pragma once

#include <string>
#include <vector>

namespace udiag::cli {

struct BpftraceOptions {
  std::string dir;                         // resolved daemon directory
  std::string program;                     // -e PROGRAM
  std::string file;                        // the program's file, without -e
  std::vector<std::string> bpftrace_args;  // bpftrace's own options (after `--`)
  bool print_program = false;              // print the program bpftrace would run, and exit
};

// Enables the events the program names in a probe instance of its own
// (instances/bpftrace-<pid>, removed when udiag exits), runs bpftrace with
// the translated program and returns its exit status (128 + signal if it
// was killed, 127 when there is no bpftrace), or kExitFailure/kExitUsage.
int Bpftrace(const BpftraceOptions& options);

}  // namespace udiag::cli
