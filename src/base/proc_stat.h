// What the kernel says of a process in /proc/PID/stat: words its own word
// cannot move.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace udiag::base {

// The fields after the command name (from the state, field 3, on), or
// false when the file cannot be read (the process is gone). The name may
// hold spaces and parentheses, so it is skipped by its last ')'.
bool ProcStatFields(pid_t pid, std::string* fields);

// The CLOCK_MONOTONIC time at which `pid` started, rounded down to the
// kernel's clock tick; 0 (the boot) when it cannot be read. A suspend since
// the start makes it earlier, never later: a bound on what the process may
// claim to have done since.
uint64_t ProcessStartNs(pid_t pid);

}  // namespace udiag::base
