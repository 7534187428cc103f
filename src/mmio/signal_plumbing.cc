#include "mmio/signal_plumbing.h"

#include <signal.h>

#include <cerrno>
#include <mutex>

#include "mmio/fault_handler.h"
#include "mmio/thread_id.h"

namespace udiag::mmio {
namespace {

// Written once before our handlers can see a probe fault; read-only afterwards.
struct sigaction g_previous_segv;
struct sigaction g_previous_trap;

// Gives a signal that is not ours to the handler it would have reached
// without us. For the default action the disposition is restored and the
// signal reproduced, so the program dies by it at the same instruction: a
// fault re-executes and faults again; a trap or a sent signal is re-raised.
void Chain(int sig, siginfo_t* info, void* context) {
  const struct sigaction& previous = sig == SIGSEGV ? g_previous_segv : g_previous_trap;
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(sig, info, context);
    return;
  }
  const bool kernel_fault = sig == SIGSEGV && info->si_code > 0;
  if (previous.sa_handler == SIG_IGN && !kernel_fault) return;
  if (previous.sa_handler == SIG_DFL || previous.sa_handler == SIG_IGN) {
    struct sigaction fallback{};
    fallback.sa_handler = SIG_DFL;
    sigaction(sig, &fallback, nullptr);
    if (!kernel_fault) raise(sig);
    return;
  }
  previous.sa_handler(sig);
}

void OnSignal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  auto* uc = static_cast<ucontext_t*>(context);
  const bool ours = sig == SIGSEGV ? HandleAccessFault(info, uc) : HandleStepTrap(info, uc);
  if (!ours) Chain(sig, info, context);
  errno = saved_errno;
}

void Install(int sig, struct sigaction* previous) {
  struct sigaction action{};
  action.sa_sigaction = OnSignal;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(sig, &action, previous);
}

}  // namespace

void InstallSignalHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    ForgetThreadIdsAfterFork();
    Install(SIGSEGV, &g_previous_segv);
    Install(SIGTRAP, &g_previous_trap);
  });
}

}  // namespace udiag::mmio
