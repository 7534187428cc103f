#include "cli/run_command.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "base/proc_stat.h"
#include "cli/cli_support.h"
#include "consumer/private_daemon.h"
#include "consumer/spawn.h"
#include "fuse/fuse_mount.h"

namespace udiag::cli {
namespace {

constexpr const char* kPreloadName = "libudiag-preload.so";
constexpr const char* kTracingDirs[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

// The process signals sent to us alone are passed on to (the parent: the
// namespace's supervisor; the supervisor: the command). A terminal's Ctrl-C
// already reached the whole process group.
std::atomic<pid_t> g_forward_to{0};
static_assert(std::atomic<pid_t>::is_always_lock_free, "used from a signal handler");

void ForwardSignal(int sig, siginfo_t* info, void*) {
  pid_t target = g_forward_to.load();
  if (target > 0 && info->si_code <= 0) kill(target, sig);
}

void InstallForwarding(pid_t target) {
  g_forward_to = target;
  struct sigaction action = {};
  action.sa_sigaction = ForwardSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool IsDirectory(const char* path) {
  struct stat st {};
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool WriteFile(const char* path, const std::string& text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// Puts this (single-threaded) process in a mount namespace of its own, in a
// user namespace as well when not root, with mount events not propagating to
// the host. Returns false after saying why.
bool EnterMountNamespace() {
  uid_t uid = geteuid();
  gid_t gid = getegid();
  // Checked first: inside the namespace the error would only say "cannot mount".
  if (access("/dev/fuse", R_OK | W_OK) != 0) {
    int err = errno;
    struct stat st{};
    stat("/dev/fuse", &st);
    fmt::print(stderr,
               "udiag: run: cannot use /dev/fuse: {} (mode {:04o}, uid {}); a FUSE mount needs it readable and "
               "writable: as root, `chmod 0666 /dev/fuse` (Debian's default) or `modprobe fuse`\n",
               std::strerror(err), st.st_mode & 07777, uid);
    return false;
  }
  if (uid == 0) {
    if (unshare(CLONE_NEWNS) != 0) {
      fmt::print(stderr, "udiag: run: cannot enter a mount namespace: unshare(CLONE_NEWNS): {}\n",
                 std::strerror(errno));
      return false;
    }
  } else {
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      int err = errno;
      fmt::print(stderr,
                 "udiag: run: cannot enter a mount namespace: unshare(CLONE_NEWUSER|CLONE_NEWNS): {}\n"
                 "udiag: run: unprivileged user namespaces are disabled; allow them (sysctl "
                 "kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0, or the AppArmor "
                 "restriction kernel.apparmor_restrict_unprivileged_userns=0) or run as root\n",
                 std::strerror(err));
      return false;
    }
    if (!WriteFile("/proc/self/setgroups", "deny") ||
        !WriteFile("/proc/self/uid_map", fmt::format("{} {} 1\n", uid, uid)) ||
        !WriteFile("/proc/self/gid_map", fmt::format("{} {} 1\n", gid, gid))) {
      fmt::print(stderr, "udiag: run: cannot enter a mount namespace: cannot write the user namespace's "
                         "uid/gid maps: {}\n",
                 std::strerror(errno));
      return false;
    }
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    fmt::print(stderr, "udiag: run: cannot enter a mount namespace: making / private: {}\n",
               std::strerror(errno));
    return false;
  }
  return true;
}

// Mounts the daemon's tree on `mountpoint` from a child: fuse::Mount in the
// background leaves its caller through fuse_daemonize once the mount is in
// place, and the detached server it forks is reparented to us (a subreaper).
bool MountTreeOn(const std::string& dir, const char* mountpoint) {
  pid_t pid = fork();
  if (pid < 0) {
    fmt::print(stderr, "udiag: run: cannot mount {}: fork: {}\n", mountpoint, std::strerror(errno));
    return false;
  }
  if (pid == 0) {
    auto client = consumer::ConsumerClient::Connect(dir);
    if (!client.ok()) {
      fmt::print(stderr, "udiag: run: cannot mount {}: connecting to udiagd at {}: {}\n", mountpoint, dir,
                 std::strerror(client.error()));
      _exit(1);
    }
    fuse::MountOptions options;
    options.mountpoint = mountpoint;
    options.daemon_dir = dir;
    std::string error;
    if (fuse::Mount(std::move(client).value(), options, &error) != 0) {
      fmt::print(stderr, "udiag: run: cannot mount {}: {}\n", mountpoint, error);
      _exit(1);
    }
    _exit(0);
  }
  return consumer::WaitForExit(pid) == 0;
}

// Our children right now (the FUSE servers, before the command starts).
std::vector<pid_t> Children() {
  std::vector<pid_t> children;
  pid_t self = getpid();
  DIR* proc = opendir("/proc");
  if (!proc) return children;
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    long pid = strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    std::string fields;
    char state;
    int ppid;
    if (base::ProcStatFields(static_cast<pid_t>(pid), &fields) && sscanf(fields.c_str(), "%c %d", &state, &ppid) == 2 &&
        ppid == self) {
      children.push_back(static_cast<pid_t>(pid));
    }
  }
  closedir(proc);
  return children;
}

// Takes the mounts down and ends their servers: unmounting ends a server's
// loop; SIGTERM asks it; SIGKILL after a grace period (the namespace's mounts
// go with its last process anyway).
void StopServers(const std::vector<pid_t>& servers, const std::vector<const char*>& mounted) {
  for (const char* mountpoint : mounted) umount2(mountpoint, MNT_DETACH);
  for (pid_t pid : servers) kill(pid, SIGTERM);
  std::vector<pid_t> left = servers;
  for (int i = 0; i < 40 && !left.empty(); ++i) {
    std::vector<pid_t> still;
    for (pid_t pid : left) {
      if (waitpid(pid, nullptr, WNOHANG) == 0) still.push_back(pid);
    }
    left.swap(still);
    if (!left.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (pid_t pid : left) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
}

// The child of `udiag run`: enters the namespace, mounts, runs the command
// and returns its status once it and the servers are gone.
int Supervise(const std::string& dir, const std::string& ld_preload, const std::vector<std::string>& command) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);  // passed on to the command
  if (!EnterMountNamespace()) return kExitFailure;
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::vector<const char*> mounted;
  for (const char* mountpoint : kTracingDirs) {
    if (!IsDirectory(mountpoint)) continue;
    if (!MountTreeOn(dir, mountpoint)) {
      StopServers(Children(), mounted);
      return kExitFailure;
    }
    mounted.push_back(mountpoint);
  }
  std::vector<pid_t> servers = Children();
  setenv("LD_PRELOAD", ld_preload.c_str(), 1);  // for the command only, not the servers
  auto pid = consumer::Spawn(command);
  if (!pid.ok()) {
    Fail("cannot run " + command[0], pid.error());
    StopServers(servers, mounted);
    return pid.error() == ENOENT ? 127 : 126;  // as shells report it
  }
  InstallForwarding(*pid);
  int status = consumer::WaitForExit(*pid);
  g_forward_to = 0;
  StopServers(servers, mounted);
  // Orphans of the command reparented to us go to init when we exit.
  return status;
}

}  // namespace

int Run(const std::string& requested_dir, const std::vector<std::string>& command) {
  std::string dir = requested_dir;
  std::unique_ptr<consumer::PrivateDaemon> private_daemon;
  if (!ConnectOrStartPrivate(&dir, "running", &private_daemon).ok()) return kExitFailure;
  std::string preload = FindUdiagLibrary(kPreloadName);
  if (preload.empty()) {
    fmt::print(stderr, "udiag: run: cannot find {} (looked in ../lib next to this program and in "
                       "$UDIAG_BIN_DIR/../lib)\n",
               kPreloadName);
    return kExitFailure;
  }
  const char* existing = getenv("LD_PRELOAD");
  std::string ld_preload = existing && *existing ? preload + ":" + existing : preload;
  setenv("UDIAG_DIR", dir.c_str(), 1);
  signal(SIGPIPE, SIG_IGN);
  fflush(nullptr);
  pid_t child = fork();
  if (child < 0) return Fail("fork", errno);
  if (child == 0) {
    signal(SIGPIPE, SIG_DFL);
    int status = Supervise(dir, ld_preload, command);
    fflush(nullptr);
    _exit(status);
  }
  InstallForwarding(child);
  int status = consumer::WaitForExit(child);
  g_forward_to = 0;
  return status;
}

}  // namespace udiag::cli
