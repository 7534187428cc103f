#include "cli/trace_command.h"

#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <thread>

#include "cli/cli_support.h"
#include "consumer/private_daemon.h"
#include "consumer/spawn.h"

namespace udiag::cli {
namespace {

using std::chrono::milliseconds;

// Events reach trace_pipe within a few ms of being written; this much silence
// after the command ended means its last events have arrived.
constexpr milliseconds kDrainQuiet{300};

std::atomic<bool> g_interrupted{false};
std::atomic<pid_t> g_command{0};
static_assert(std::atomic<pid_t>::is_always_lock_free, "used from a signal handler");

// SIGINT and SIGTERM end a trace without a command. With one, the command
// decides when the trace ends: a terminal's Ctrl-C has already reached it (it
// is in our process group), and a signal sent to udiag alone is passed on,
// so the events it writes while it exits are still traced.
void OnTerminationSignal(int sig, siginfo_t* info, void*) {
  pid_t command = g_command.load();
  if (command == 0) {
    g_interrupted = true;
  } else if (info->si_code <= 0) {  // SI_USER, SI_QUEUE, SI_TKILL: sent by a process
    kill(command, sig);
  }
}

void InstallSignalHandlers() {
  struct sigaction action = {};
  action.sa_sigaction = OnTerminationSignal;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  // A closed stdout then ends the stream through a failed write instead of
  // killing us, so a private daemon is still stopped and cleaned up.
  signal(SIGPIPE, SIG_IGN);
}

// Takes the client so that it is closed on return: that ends the daemon's
// pipe and undoes the client's auto-enables.
int StreamToStdout(consumer::ConsumerClient client, const std::string& path, const std::atomic<bool>* stop,
                   milliseconds drain_quiet) {
  int err = client.StreamPipe(path, WriteToStdout, stop, drain_quiet);
  return err ? Fail(path, err) : 0;
}

int TraceCommand(consumer::ConsumerClient client, const std::string& dir, const std::vector<std::string>& command) {
  // The command's libudiag then registers with the daemon we read from.
  setenv("UDIAG_DIR", dir.c_str(), 1);
  auto pid = consumer::Spawn(command);
  if (!pid.ok()) {
    Fail("cannot run " + command[0], pid.error());
    return pid.error() == ENOENT ? 127 : 126;  // as shells report it
  }
  g_command = *pid;
  InstallSignalHandlers();
  std::atomic<bool> exited{false};
  int status = 0;
  std::thread waiter([&] {
    status = consumer::WaitForExit(*pid);
    exited = true;
  });
  int result = StreamToStdout(std::move(client), "trace_pipe", &exited, kDrainQuiet);
  waiter.join();  // a failed stream still lets the command finish
  return result != 0 ? result : status;
}

}  // namespace

int FollowPipe(consumer::ConsumerClient client, const std::string& path) {
  InstallSignalHandlers();
  return StreamToStdout(std::move(client), path, &g_interrupted, milliseconds(0));
}

int Trace(const TraceOptions& options) {
  std::string dir = options.dir;
  std::unique_ptr<consumer::PrivateDaemon> private_daemon;  // outlives the client
  auto client = ConnectOrStartPrivate(&dir, "tracing", &private_daemon);
  if (!client.ok()) return kExitFailure;
  // Before the command starts, so the events it registers first are enabled
  // at once.
  std::vector<std::string> globs = options.events.empty() ? std::vector<std::string>{"*"} : options.events;
  for (const std::string& glob : globs) {
    if (int err = client->AutoEnable(glob)) return Fail("enable " + glob, err);
  }
  if (options.command.empty()) return FollowPipe(std::move(client).value(), "trace_pipe");
  return TraceCommand(std::move(client).value(), dir, options.command);
}

}  // namespace udiag::cli
