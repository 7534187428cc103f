// `udiag hist`: a histogram of one event (a hist trigger in an instance of
// its own), printed when the command ends or on Ctrl-C.
#pragma once

#include <string>
#include <vector>

namespace udiag::cli {

struct HistOptions {
  std::string dir;                   // resolved; a private daemon is started if none serves it
  std::string event;                 // "name" (user_events) or "system:name"
  std::vector<std::string> keys;     // -k, each may hold several: "a,b.hex"
  std::vector<std::string> vals;     // -v
  std::string sort;                  // --sort
  std::string filter;                // --filter
  bool json = false;
  std::vector<std::string> command;  // empty: until SIGINT/SIGTERM
};

// The hist trigger text the options make: "hist:keys=...[:vals=...][:sort=...] [if ...]".
std::string HistTriggerText(const HistOptions& options);

// Returns the command's exit status (or 0 when interrupted), 127/126 when
// the command cannot be run, kExitFailure on errors (a bad key: EINVAL).
int Hist(const HistOptions& options);

}  // namespace udiag::cli
