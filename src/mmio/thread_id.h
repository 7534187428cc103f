// The calling thread's id, cached in initial-exec TLS: a handler asks for it
// on every access and gettid() is a system call. Async-signal-safe.
#pragma once

#include <sys/types.h>

namespace udiag::mmio {

pid_t CurrentThreadId();
// Registers the fork handler that forgets the cached id in the child. Control path.
void ForgetThreadIdsAfterFork();

}  // namespace udiag::mmio
