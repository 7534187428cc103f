// `udiag run [--] COMMAND [ARGS...]`: runs an unmodified user_events program
// in a private mount namespace where /sys/kernel/tracing (and
// /sys/kernel/debug/tracing, if present) is the daemon's tree mounted with
// FUSE, and libudiag-preload.so is in LD_PRELOAD. See docs/dropin.md.
#pragma once

#include <string>
#include <vector>

namespace udiag::cli {

// Runs `command` against the daemon at `dir` (resolved), starting a private
// daemon for the duration if none is reachable there. Returns the command's
// status as a shell reports it (128+N if signal N killed it; 127 if it cannot
// be found), or kExitFailure if the namespace or the mounts cannot be set up.
int Run(const std::string& dir, const std::vector<std::string>& command);

}  // namespace udiag::cli
