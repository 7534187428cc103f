// udiagd: the daemon of one tracing domain (system-wide as root, per user
// otherwise). See docs/cli.md.
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "base/daemon_dir.h"
#include "base/errno_name.h"
#include "service/server.h"

namespace {

// Accepts a group name or number.
std::optional<gid_t> ParseGroup(const std::string& text) {
  if (text.empty()) return std::nullopt;
  if (group* g = getgrnam(text.c_str())) return g->gr_gid;
  char* end;
  unsigned long gid = strtoul(text.c_str(), &end, 10);
  if (*end == '\0') return static_cast<gid_t>(gid);
  fmt::print(stderr, "udiagd: no such group: {}\n", text);
  exit(2);
}

// Forks into the background; the parent exits once the child says it is
// ready (or failed), so `udiagd --daemonize && udiag ...` never races.
int Daemonize(int* ready_fd) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) < 0) return errno;
  pid_t pid = fork();
  if (pid < 0) return errno;
  if (pid > 0) {
    close(pipefd[1]);
    char status = 1;
    if (read(pipefd[0], &status, 1) != 1) status = 1;
    _exit(status);
  }
  close(pipefd[0]);
  setsid();
  if (fork() > 0) _exit(0);
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  dup2(null, STDIN_FILENO);
  dup2(null, STDOUT_FILENO);
  *ready_fd = pipefd[1];
  return 0;
}

// Clients cost the daemon fds; the per-user limits share out the hard
// limit, not the soft default (often 1024).
void RaiseFdLimit() {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "udiagd - the udiag tracing daemon.\n\n"
      "Holds the user_events registry and a virtual tracefs tree, gathers events\n"
      "from every producer process, and serves them to consumers (udiag CLI)."};
  std::string dir, producer_group, consumer_group;
  bool daemonize = false, verbose = false;
  uint32_t ring_kb = udiag::service::kDefaultRingBytes / 1024;
  app.add_option("--dir", dir,
                 "Directory for the socket and pid file (default: $UDIAG_DIR, else /run/udiag as root, "
                 "else $XDG_RUNTIME_DIR/udiag)");
  app.add_flag("--daemonize", daemonize, "Detach and run in the background once ready");
  app.add_option("--producer-group", producer_group, "Group whose members may register and write events");
  app.add_option("--consumer-group", consumer_group, "Group whose members may enable events and read traces");
  app.add_option("--ring-kb", ring_kb, fmt::format("Size of each producer thread's ring in KiB (power of two; default {})", ring_kb))
      ->check(CLI::Range(4u, 65536u));
  uint32_t ring_max_kb = udiag::service::kDefaultRingMaxBytes / 1024;
  app.add_option(
         "--ring-max-kb", ring_max_kb,
         fmt::format("Size in KiB a thread's ring grows to at most once it overflowed, four times "
                     "larger each time (power of two; default {}; --ring-kb or less: rings never grow). "
                     "Rings of this size are given while their user's rings stay within half of "
                     "--max-ring-mb-per-user",
                     ring_max_kb))
      ->check(CLI::Range(4u, 65536u));
  udiag::service::UserLimits limits;
  uint64_t queued_kb_per_connection = limits.queued_bytes_per_connection >> 10;
  uint64_t queued_kb = limits.queued_bytes >> 10;
  uint64_t ring_mb = limits.ring_bytes >> 20;
  app.add_option("--max-connections-per-user", limits.fds,
                 fmt::format("Connections plus user_events_data files one unprivileged user may hold open "
                             "(EMFILE beyond; default {})", limits.fds))
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  app.add_option("--max-queued-kb-per-connection", queued_kb_per_connection,
                 fmt::format("Unread replies one connection may leave queued before it is dropped (default {})",
                             queued_kb_per_connection))
      ->check(CLI::Range(uint64_t{64}, uint64_t{1} << 30));
  app.add_option("--max-queued-kb-per-user", queued_kb,
                 fmt::format("Unread replies all of one unprivileged user's connections may leave queued "
                             "(default {})", queued_kb))
      ->check(CLI::Range(uint64_t{64}, uint64_t{1} << 30));
  app.add_option("--max-events-per-user", limits.events,
                 fmt::format("Events one unprivileged user's registrations may create (EMFILE beyond; default {})",
                             limits.events))
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  app.add_option("--max-enablers-per-user", limits.enablers,
                 fmt::format("Registrations (enablers) one unprivileged user's processes may hold (ENOMEM beyond; "
                             "default {})",
                             limits.enablers))
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 24));
  app.add_option("--max-ring-mb-per-user", ring_mb,
                 fmt::format("Ring memory of one unprivileged user's producer threads (ENOMEM beyond; default {})",
                             ring_mb))
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30));
  app.add_flag("-v,--verbose", verbose, "Log connections to stderr");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and version print and exit 0; every usage error exits 2.
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (ring_kb & (ring_kb - 1)) {
    fmt::print(stderr, "udiagd: --ring-kb must be a power of two\n");
    return 2;
  }
  if (ring_max_kb & (ring_max_kb - 1)) {
    fmt::print(stderr, "udiagd: --ring-max-kb must be a power of two\n");
    return 2;
  }

  udiag::service::ServerOptions options;
  options.dir = udiag::base::ResolveDaemonDir(dir);
  options.policy.owner = geteuid();
  options.policy.producer_group = ParseGroup(producer_group);
  options.policy.consumer_group = ParseGroup(consumer_group);
  options.ring_bytes = ring_kb * 1024;
  options.ring_max_bytes = ring_max_kb * 1024;
  options.verbose = verbose;
  limits.queued_bytes_per_connection = queued_kb_per_connection << 10;
  limits.queued_bytes = queued_kb << 10;
  limits.ring_bytes = ring_mb << 20;
  options.limits = limits;
  RaiseFdLimit();

  int ready_fd = -1;
  if (daemonize) {
    if (int err = Daemonize(&ready_fd)) {
      fmt::print(stderr, "udiagd: cannot daemonize: {}\n", udiag::base::DescribeErrno(err));
      return 1;
    }
  }
  auto server = udiag::service::Server::Create(options);
  if (!server.ok()) return 1;
  if (ready_fd >= 0) {
    char ok = 0;
    [[maybe_unused]] ssize_t n = write(ready_fd, &ok, 1);
    close(ready_fd);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    dup2(null, STDERR_FILENO);
  }
  if (verbose) fmt::print(stderr, "udiagd: serving {}\n", options.dir);
  return (*server)->Run();
}
