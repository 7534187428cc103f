// When a process started, as the kernel recorded it (/proc/PID/stat): a
// time its own word cannot move, to bound what it may claim to have done
// since.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace udiag::base {

// The CLOCK_MONOTONIC time at which `pid` started, rounded down to the
// kernel's clock tick; 0 (the boot) when it cannot be read (the process is
// gone). A suspend since the start makes it earlier, never later.
uint64_t ProcessStartNs(pid_t pid);

}  // namespace udiag::base
