#include "cli/mmiotrace_command.h"

#include <fcntl.h>
#include <link.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <string_view>

#include "base/scoped_fd.h"
#include "cli/cli_support.h"
#include "cli/termination_signals.h"
#include "consumer/consumer_client.h"
#include "consumer/spawn.h"
#include "mmiotrace/session.h"
#include "mmiotrace/session_wire.h"

namespace udiag::cli {
namespace {

constexpr const char* kPreloadName = "libudiag-mmiotrace.so";

// The sanitizer runtimes this udiag runs with (sanitizer builds only): a
// sanitized preload loads only in a process where they come first.
std::string SanitizerRuntimes() {
  std::string runtimes;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        std::string_view name = info->dlpi_name ? info->dlpi_name : "";
        size_t slash = name.rfind('/');
        std::string_view base = slash == std::string_view::npos ? name : name.substr(slash + 1);
        for (const char* runtime : {"libasan.so", "libubsan.so", "libtsan.so"}) {
          if (base.starts_with(runtime)) *static_cast<std::string*>(out) += std::string(name) + ":";
        }
        return 0;
      },
      &runtimes);
  return runtimes;
}

// The --map files as /proc/self/fd links name them: absolute, resolved.
bool ResolveMaps(const std::vector<std::string>& maps, std::string* joined) {
  for (const std::string& map : maps) {
    char resolved[PATH_MAX];
    if (!realpath(map.c_str(), resolved)) {
      Fail("mmiotrace: --map " + map, errno);
      return false;
    }
    if (!joined->empty()) *joined += ':';
    *joined += resolved;
  }
  return true;
}

// Says once that events go nowhere when no daemon serves `dir`.
void WarnIfNoDaemon(const std::string& dir) {
  auto client = consumer::ConsumerClient::Connect(dir);
  if (!client.ok() && consumer::IsNoDaemonError(client.error())) {
    fmt::print(stderr, "udiag: mmiotrace: no udiagd is running at {}; the mmiotrace_* events go nowhere "
                       "(the log is written all the same)\n", dir);
  }
}

}  // namespace

int Mmiotrace(const MmiotraceOptions& options) {
  std::string preload = FindUdiagLibrary(kPreloadName);
  if (preload.empty()) {
    fmt::print(stderr, "udiag: mmiotrace: cannot find {} (looked in ../lib next to this program and in "
                       "$UDIAG_BIN_DIR/../lib)\n", kPreloadName);
    return kExitFailure;
  }
  std::string maps;
  if (!ResolveMaps(options.maps, &maps)) return kExitFailure;
  base::ScopedFd output;
  if (!options.output.empty()) {
    output.Reset(open(options.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!output) return Fail("mmiotrace: " + options.output, errno);
  }
  WarnIfNoDaemon(options.dir);
  auto session = mmiotrace::Session::Create(options.dir, output ? output.get() : STDOUT_FILENO);
  if (!session.ok()) return Fail("mmiotrace: cannot listen in " + options.dir, session.error());

  const char* existing = getenv("LD_PRELOAD");
  preload = SanitizerRuntimes() + preload;
  setenv("LD_PRELOAD", (existing && *existing ? preload + ":" + existing : preload).c_str(), 1);
  setenv(mmiotrace::kEnvSession, (*session)->socket_path().c_str(), 1);
  setenv(mmiotrace::kEnvMaps, maps.c_str(), 1);
  if (!options.mode.empty()) setenv(mmiotrace::kEnvMode, options.mode.c_str(), 1);
  setenv("UDIAG_DIR", options.dir.c_str(), 1);
  // Held until the handlers that pass them on are in place (Spawn gives the
  // command an empty mask).
  sigset_t termination, previous;
  sigemptyset(&termination);
  sigaddset(&termination, SIGINT);
  sigaddset(&termination, SIGTERM);
  sigprocmask(SIG_BLOCK, &termination, &previous);
  auto pid = consumer::Spawn(options.command);
  if (!pid.ok()) {
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    Fail("mmiotrace: cannot run " + options.command[0], pid.error());
    return pid.error() == ENOENT ? 127 : 126;  // as shells report it
  }
  // Ctrl-C reaches the command; the session ends when the command does.
  HandleTerminationSignals(*pid);
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  int status = -1;
  int err = (*session)->Serve([&] {
    int wait_status;
    if (waitpid(*pid, &wait_status, WNOHANG) != *pid) return false;
    status = consumer::ShellStatus(wait_status);
    return true;
  });
  const mmiotrace::SessionSummary& summary = (*session)->summary();
  fmt::print(stderr, "udiag: mmiotrace: {} accesses, {} mappings, {} marks, {} lost\n", summary.accesses,
             summary.mappings, summary.marks, summary.lost);
  if (err) return Fail("mmiotrace: writing the log", err);
  return status;
}

}  // namespace udiag::cli
