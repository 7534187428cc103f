#include "cli/trace_command.h"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>

#include "cli/cli_support.h"
#include "cli/session_end.h"
#include "cli/termination_signals.h"
#include "consumer/private_daemon.h"

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
  SessionEnd session_end;
  if (int status = session_end.Start(command, dir)) return status;
  int result = StreamToStdout(std::move(client), "trace_pipe", &session_end.stop(), kDrainQuiet);
  int status = session_end.Finish();  // a failed stream still lets the command finish
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
