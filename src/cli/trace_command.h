// `udiag trace`: stream trace_pipe to stdout, alone or around a command.
#pragma once

#include <string>
#include <vector>

#include "consumer/consumer_client.h"

namespace udiag::cli {

struct TraceOptions {
  std::string dir;                  // resolved; a private daemon is started if none serves it
  std::vector<std::string> events;  // auto-enable globs; empty: every event
  std::vector<std::string> filters; // filters[i] for events[i] ("": none)
  std::vector<std::string> command; // empty: trace until SIGINT/SIGTERM
};

// Returns the command's exit status (128 + signal if it was killed), 0 when
// interrupted without a command, 127/126 when the command cannot be run, or
// kExitFailure.
int Trace(const TraceOptions& options);

// Streams the trace_pipe at `path` to stdout until SIGINT or SIGTERM, then
// closes the connection.
int FollowPipe(consumer::ConsumerClient client, const std::string& path);

}  // namespace udiag::cli
