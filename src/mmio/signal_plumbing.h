// The SIGSEGV/SIGTRAP handlers (SA_SIGINFO | SA_ONSTACK | SA_NODEFER) and the
// chaining to the program's previous handlers for signals that are not ours.
#pragma once

namespace udiag::mmio {

// Installs both handlers once per process, remembering the actions they
// replace. Control path only. A handler the program installs afterwards
// replaces ours (probes then stop working; see docs/mmio.md).
void InstallSignalHandlers();

}  // namespace udiag::mmio
