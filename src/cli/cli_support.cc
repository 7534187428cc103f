#include "cli/cli_support.h"

#include <fmt/format.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

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

base::ErrorOr<consumer::ConsumerClient> ConnectOrStartPrivate(
    std::string* dir, std::string_view doing, std::unique_ptr<consumer::PrivateDaemon>* private_daemon) {
  auto client = consumer::ConsumerClient::Connect(*dir);
  if (!client.ok() && consumer::IsNoDaemonError(client.error())) {
    std::string error;
    *private_daemon = consumer::PrivateDaemon::Start(&error);
    if (!*private_daemon) {
      fmt::print(stderr, "udiag: no udiagd is running at {}, and starting a private one failed: {}\n", *dir, error);
      return base::Errno{ENOENT};
    }
    fmt::print(stderr, "udiag: no udiagd is running at {}; {} with a private one at {}\n", *dir, doing,
               (*private_daemon)->dir());
    *dir = (*private_daemon)->dir();
    client = consumer::ConsumerClient::Connect(*dir);
  }
  if (!client.ok()) FailToConnect(*dir, client.error());
  return client;
}

int EnableEvents(consumer::ConsumerClient& client, const std::vector<std::string>& events,
                 const std::vector<std::string>& filters, const std::string& instance) {
  const std::string log_path = instance.empty() ? "error_log" : "instances/" + instance + "/error_log";
  std::vector<std::string> globs = events.empty() ? std::vector<std::string>{"*"} : events;
  for (size_t i = 0; i < globs.size(); ++i) {
    const std::string filter = i < filters.size() ? filters[i] : "";
    auto before = filter.empty() ? base::ErrorOr<std::string>(std::string()) : client.Read(log_path);
    if (int err = client.AutoEnable(globs[i], instance, filter)) return Fail("enable " + globs[i], err);
    if (filter.empty() || !before.ok()) continue;
    auto after = client.Read(log_path);
    if (!after.ok() || *after == *before) continue;
    // The new entries, or the whole log when old ones made room for them.
    std::string_view added = *after;
    if (added.starts_with(*before)) added.remove_prefix(before->size());
    fmt::print(stderr, "udiag: filter for {}:\n{}", globs[i], added);
    return kExitFailure;
  }
  return 0;
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

std::string FindUdiagLibrary(const std::string& name) {
  std::vector<std::string> bin_dirs;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    std::string path(exe, static_cast<size_t>(n));
    bin_dirs.push_back(path.substr(0, path.rfind('/')));
  }
  if (const char* bin = getenv("UDIAG_BIN_DIR"); bin && *bin) bin_dirs.push_back(bin);
  for (const std::string& bin : bin_dirs) {
    std::string candidate = bin + "/../lib/" + name;
    struct stat st {};
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return candidate;
  }
  return "";
}

}  // namespace udiag::cli
