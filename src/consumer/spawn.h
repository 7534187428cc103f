// Starting and reaping child processes: the private daemon and the command
// `udiag trace` runs.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "base/error_or.h"

namespace udiag::consumer {

// Runs argv[0] (looked up in $PATH unless it has a slash) in a child process
// with an empty signal mask and SIGPIPE at its default, whatever the caller
// did to them. `in_child` runs in the child just before exec and may only make
// async-signal-safe calls. Returns the pid, or the errno of fork or exec
// (ENOENT: no such program; the failed child is already reaped).
base::ErrorOr<pid_t> Spawn(const std::vector<std::string>& argv,
                           const std::function<void()>& in_child = nullptr);

// A wait status the way a shell reports it: the exit code, or 128 + the
// number of the signal that killed the process.
int ShellStatus(int wait_status);

// Waits for `pid` to end and returns ShellStatus() of it; -1 when it is not
// a child of ours.
int WaitForExit(pid_t pid);

}  // namespace udiag::consumer
