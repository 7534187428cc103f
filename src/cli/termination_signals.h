// SIGINT/SIGTERM handling shared by the commands that run until interrupted
// or around a child command (`trace`, `record`).
#pragma once

#include <sys/types.h>

#include <atomic>

namespace udiag::cli {

// Without a command (`command` 0), SIGINT and SIGTERM set Interrupted(). With
// one, the command decides when we end: a terminal's Ctrl-C has already
// reached it (it is in our process group), and a signal sent to udiag alone
// is passed on, so the events it writes while it exits are still seen.
// SIGPIPE is ignored: a closed stdout shows up as a failed write.
void HandleTerminationSignals(pid_t command);

const std::atomic<bool>& Interrupted();

}  // namespace udiag::cli
