#include "cli/cli_support.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>

#include "base/daemon_dir.h"
#include "base/errno_name.h"

namespace udiag::cli {

int Fail(std::string_view what, int err) {
  fmt::print(stderr, "udiag: {}: {}\n", what, base::DescribeErrno(err));
  return kExitFailure;
}

int FailToConnect(const std::string& dir, int err) {
  if (!consumer::IsNoDaemonError(err)) return Fail("cannot connect to udiagd at " + base::ControlSocketPath(dir), err);
  fmt::print(stderr,
             "udiag: no udiagd is running at {}; start one with 'udiagd --dir {} --daemonize', "
             "or run 'udiag trace -- COMMAND' to trace a command under a private one\n",
             dir, dir);
  return kExitFailure;
}

base::ErrorOr<consumer::ConsumerClient> ConnectOrExplain(const std::string& dir) {
  auto client = consumer::ConsumerClient::Connect(dir);
  if (!client.ok()) FailToConnect(dir, client.error());
  return client;
}

bool WriteToStdout(std::string_view text) {
  while (!text.empty()) {
    ssize_t n = write(STDOUT_FILENO, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.remove_prefix(n);
  }
  return true;
}

}  // namespace udiag::cli
