// What the SIGSEGV and SIGTRAP handlers do for probe faults (docs/mmio.md):
// find the probe in the current snapshot, call pre, perform the access in the
// snapshot's mode (B: emulate through the alias view; B': rebase the address
// register onto the alias and single-step; A: open the page and single-step),
// call post. Async-signal-safe.
#pragma once

#include <signal.h>
#include <sys/ucontext.h>

namespace udiag::mmio {

// False when the fault is not on an armed page (the caller chains it).
bool HandleAccessFault(siginfo_t* info, ucontext_t* uc);
// False when the trap is not the end of one of our single steps.
bool HandleStepTrap(siginfo_t* info, ucontext_t* uc);

}  // namespace udiag::mmio
