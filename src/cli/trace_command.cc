#include "cli/trace_command.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <thread>

#include "cli/cli_support.h"
#include "cli/termination_signals.h"
#include "consumer/private_daemon.h"
#include "consumer/spawn.h"

namespace udiag::cli {
namespace {

using std::chrono::milliseconds;

// Events reach trace_pipe within a few ms of being written; this much silence
// after the command ended means its last events have arrived.
constexpr milliseconds kDrainQuiet{300};

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
  HandleTerminationSignals(*pid);
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
  HandleTerminationSignals(0);
  return StreamToStdout(std::move(client), path, &Interrupted(), milliseconds(0));
}

int Trace(const TraceOptions& options) {
  std::string dir = options.dir;
  std::unique_ptr<consumer::PrivateDaemon> private_daemon;  // outlives the client
  auto client = ConnectOrStartPrivate(&dir, "tracing", &private_daemon);
  if (!client.ok()) return kExitFailure;
  // Before the command starts, so the events it registers first are enabled
  // (and filtered) at once.
  if (EnableEvents(*client, options.events, options.filters, "")) return kExitFailure;
  if (options.command.empty()) return FollowPipe(std::move(client).value(), "trace_pipe");
  return TraceCommand(std::move(client).value(), dir, options.command);
}

}  // namespace udiag::cli
