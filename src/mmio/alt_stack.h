// Per-thread alternate signal stacks, so a probe fault is handled even when
// the faulting thread's stack is almost full. Control path only.
#pragma once

namespace udiag::mmio {

// Gives the calling thread a sigaltstack of getauxval(AT_MINSIGSTKSZ) plus the
// handler's own needs, unless it already has one (its own, or a sanitizer's).
// The stack is freed when the thread exits. 0 or -errno.
int EnsureAltStack();

}  // namespace udiag::mmio
