#include "consumer/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "base/scoped_fd.h"

namespace udiag::consumer {

using base::Errno;
using base::ScopedFd;

namespace {

// A plain command starts through posix_spawn, a vfork underneath. fork()
// would copy our page tables and write-protect every page we own, and a
// recorder that starts draining at full rate just then would pay a page
// fault for each of its buffers' pages.
base::ErrorOr<pid_t> SpawnPlain(char* const* args) {
  posix_spawnattr_t attr;
  if (int err = posix_spawnattr_init(&attr)) return Errno{err};
  sigset_t none, pipe;
  sigemptyset(&none);
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &pipe);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid;
  int err = posix_spawnp(&pid, args[0], nullptr, &attr, args, environ);
  posix_spawnattr_destroy(&attr);
  if (err) return Errno{err};  // glibc reports exec's error and reaps the child
  return pid;
}

// A child with set-up of its own before exec is forked.
base::ErrorOr<pid_t> SpawnWithSetup(char* const* args, const std::function<void()>& in_child) {
  // The child reports a failed exec through this pipe; a successful exec
  // closes it (O_CLOEXEC), so end-of-file means the program is running.
  int report[2];
  if (pipe2(report, O_CLOEXEC) < 0) return Errno{errno};
  ScopedFd read_end(report[0]), write_end(report[1]);
  pid_t pid = fork();
  if (pid < 0) return Errno{errno};
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    in_child();
    execvp(args[0], args);
    int err = errno;
    [[maybe_unused]] ssize_t n = write(write_end.get(), &err, sizeof(err));
    _exit(127);
  }
  write_end.Reset();
  int exec_error = 0;
  ssize_t n;
  do {
    n = read(read_end.get(), &exec_error, sizeof(exec_error));
  } while (n < 0 && errno == EINTR);
  if (n != sizeof(exec_error)) return pid;
  WaitForExit(pid);
  return Errno{exec_error};
}

}  // namespace

base::ErrorOr<pid_t> Spawn(const std::vector<std::string>& argv, const std::function<void()>& in_child) {
  if (argv.empty()) return Errno{EINVAL};
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  return in_child ? SpawnWithSetup(args.data(), in_child) : SpawnPlain(args.data());
}

int ShellStatus(int wait_status) {
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return WEXITSTATUS(wait_status);
}

int WaitForExit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return ShellStatus(status);
}

}  // namespace udiag::consumer
