#include "cli/termination_signals.h"

#include <signal.h>

namespace udiag::cli {
namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<pid_t> g_command{0};
static_assert(std::atomic<pid_t>::is_always_lock_free, "used from a signal handler");

void OnTerminationSignal(int sig, siginfo_t* info, void*) {
  pid_t command = g_command.load();
  if (command == 0) {
    g_interrupted = true;
  } else if (info->si_code <= 0) {  // SI_USER, SI_QUEUE, SI_TKILL: sent by a process
    kill(command, sig);
  }
}

}  // namespace

void HandleTerminationSignals(pid_t command) {
  g_command = command;
  struct sigaction action = {};
  action.sa_sigaction = OnTerminationSignal;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

const std::atomic<bool>& Interrupted() { return g_interrupted; }

}  // namespace udiag::cli
