// `udiag mmiotrace`: runs a command with libudiag-mmiotrace.so preloaded and
// writes the mmiotrace log of its device accesses. See docs/mmiotrace.md.
#pragma once

#include <string>
#include <vector>

namespace udiag::cli {

struct MmiotraceOptions {
  std::string dir;                   // resolved daemon directory: events and the session socket
  std::string output;                // log file; empty: stdout
  std::vector<std::string> maps;     // --map files traced like devices (phys = file offset)
  std::string mode;                  // emulate, rebase-step or single-step; empty: the engine's default
  std::vector<std::string> command;
};

// Returns the command's status as a shell reports it (128+N if signal N
// killed it; 127 if it cannot be found), or kExitFailure when the trace
// cannot be set up or its log cannot be written. Prints the summary
// (accesses, mappings, marks, lost) on stderr.
int Mmiotrace(const MmiotraceOptions& options);

}  // namespace udiag::cli
