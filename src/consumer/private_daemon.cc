#include "consumer/private_daemon.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <thread>

#include "base/daemon_dir.h"
#include "base/errno_name.h"
#include "base/error_or.h"
#include "base/unix_socket.h"
#include "consumer/spawn.h"

namespace udiag::consumer {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kStartTimeout = std::chrono::seconds(5);
constexpr auto kStopTimeout = std::chrono::seconds(2);
constexpr auto kPollInterval = std::chrono::milliseconds(10);

bool IsExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// The udiagd of the same build or installation as the running program comes
// first, so a build tree does not pick up an older installed daemon.
std::string FindDaemonBinary() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::string beside = self.parent_path() / "udiagd";
    if (IsExecutable(beside)) return beside;
  }
  if (const char* bin_dir = getenv("UDIAG_BIN_DIR"); bin_dir && *bin_dir) {
    std::string configured = std::string(bin_dir) + "/udiagd";
    if (IsExecutable(configured)) return configured;
  }
  return "udiagd";  // Spawn looks it up in $PATH
}

base::ErrorOr<std::string> MakeTemporaryDirectory() {
  const char* tmp = getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/udiag-XXXXXX";
  if (!mkdtemp(path.data())) return base::Errno{errno};
  return path;
}

// Runs in the daemon's child process: keeps the daemon off our terminal (a
// Ctrl-C meant for a traced command must not stop it before the trace is
// drained), our stdin and our stdout (which may be carrying a trace), and
// makes it die with us.
void PrepareDaemonChild(pid_t parent) {
  setsid();
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    if (null > STDERR_FILENO) close(null);
  }
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(1);  // the parent died before prctl took effect
}

// Reaps `pid` if it has ended, with its ShellStatus() in `*status`.
bool Reaped(pid_t pid, int* status) {
  int wait_status;
  if (waitpid(pid, &wait_status, WNOHANG) != pid) return false;
  *status = ShellStatus(wait_status);
  return true;
}

}  // namespace

std::unique_ptr<PrivateDaemon> PrivateDaemon::Start(std::string* error) {
  auto dir = MakeTemporaryDirectory();
  if (!dir.ok()) {
    *error = "cannot create a temporary directory: " + base::DescribeErrno(dir.error());
    return nullptr;
  }
  std::unique_ptr<PrivateDaemon> daemon(new PrivateDaemon(std::move(dir).value()));
  std::string binary = FindDaemonBinary();
  pid_t parent = getpid();
  auto pid = Spawn({binary, "--dir", daemon->dir_}, [parent] { PrepareDaemonChild(parent); });
  if (!pid.ok()) {
    *error = fmt::format("cannot run {}: {}", binary, base::DescribeErrno(pid.error()));
    return nullptr;
  }
  daemon->pid_ = *pid;
  if (std::string why = daemon->WaitUntilServing(); !why.empty()) {
    *error = std::move(why);
    return nullptr;
  }
  return daemon;
}

std::string PrivateDaemon::WaitUntilServing() {
  std::string socket = base::ControlSocketPath(dir_);
  Clock::time_point deadline = Clock::now() + kStartTimeout;
  for (;;) {
    int status;
    if (Reaped(pid_, &status)) {
      pid_ = 0;
      return fmt::format("udiagd ended with status {} before accepting connections", status);
    }
    if (base::ConnectSeqpacket(socket).ok()) return {};
    if (Clock::now() > deadline) {
      return fmt::format("udiagd did not accept connections on {} within {} s", socket, kStartTimeout.count());
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

PrivateDaemon::~PrivateDaemon() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    Clock::time_point deadline = Clock::now() + kStopTimeout;
    int status;
    while (!Reaped(pid_, &status)) {
      if (Clock::now() > deadline) {
        kill(pid_, SIGKILL);
        WaitForExit(pid_);
        break;
      }
      std::this_thread::sleep_for(kPollInterval);
    }
  }
  std::error_code ignored;  // a daemon that crashed may leave its socket behind
  std::filesystem::remove_all(dir_, ignored);
}

}  // namespace udiag::consumer
