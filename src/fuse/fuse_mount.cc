#define FUSE_USE_VERSION 31
#include "fuse/fuse_mount.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fuse.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace udiag::fuse {
namespace {

using consumer::ConsumerClient;
using namespace std::chrono_literals;

// Files a consumer may write (mode 0644); every other file is read-only.
const std::set<std::string_view> kWritable = {
    "enable",     "dynamic_events", "set_event",       "trace",       "tracing_on",          "buffer_size_kb",
    "user_events_max", "trace_clock", "overwrite",     "snapshot",    "user_events_data",    "usdt_probe",
    "filter",     "error_log",      "blocking_timeout_ms", "trigger", "synthetic_events"};

std::string_view BaseName(std::string_view path) { return path.substr(path.find_last_of('/') + 1); }

// The device of the mount at `mountpoint` (the last one there), from
// /proc/self/mountinfo: a stat of it would be a request to our own file
// system, which never returns if the loop ends before answering it.
std::optional<std::string> MountDevice(const std::string& mountpoint) {
  std::string escaped;  // mountinfo writes these as octal escapes
  for (char c : mountpoint) {
    switch (c) {
      case ' ': escaped += "\\040"; break;
      case '\t': escaped += "\\011"; break;
      case '\n': escaped += "\\012"; break;
      case '\\': escaped += "\\134"; break;
      default: escaped += c;
    }
  }
  std::ifstream in("/proc/self/mountinfo");
  std::optional<std::string> device;
  for (std::string line; std::getline(in, line);) {
    // ID PARENT MAJOR:MINOR ROOT MOUNTPOINT ...
    std::istringstream fields(line);
    std::string id, parent, major_minor, root, point;
    if (fields >> id >> parent >> major_minor >> root >> point && point == escaped) device = major_minor;
  }
  return device;
}

// FUSE paths start with '/'; the daemon's are relative to the tree's root.
std::string TreePath(const char* path) {
  std::string_view p(path);
  while (!p.empty() && p.front() == '/') p.remove_prefix(1);
  return std::string(p);
}

bool IsTransportError(int err) { return err == ECONNRESET || err == EPIPE || err == EPROTO || err == ENOTCONN; }

// Text a trace_pipe open holds for its reader. When the reader stops, the
// stream thread stops taking text from the daemon, whose instance buffer then
// fills and drops (and counts) events: the reader sees [LOST N EVENTS] lines
// where they were lost, as from ftrace, and this process stays small.
constexpr size_t kMaxPipeBufferBytes = 1 << 20;

// A trace_pipe open: its own connection streams on a thread into `buffer`.
struct PipeReader {
  std::mutex mu;
  std::condition_variable cv;
  std::string buffer;
  bool done = false;
  int err = 0;
  fuse_pollhandle* poll_handle = nullptr;
  std::atomic<bool> stop{false};
  std::thread thread;

  // Tells a poll() waiter that something changed. Called with `mu` held.
  void NotifyPoll() {
    if (poll_handle) {
      fuse_notify_poll(poll_handle);
      fuse_pollhandle_destroy(poll_handle);
      poll_handle = nullptr;
    }
  }
};

struct OpenFile {
  std::string path;
  std::string snapshot;                // the content at open, for reads
  bool truncate_pending = false;       // the next write truncates (opened without O_APPEND)
  bool truncate_at_close = false;      // O_TRUNC on dynamic_events, synthetic_events or trace with no write yet
  std::unique_ptr<PipeReader> pipe;
};

class Server {
 public:
  Server(ConsumerClient client, MountOptions options)
      : client_(std::move(client)), options_(std::move(options)), uid_(getuid()), gid_(getgid()) {}

  const MountOptions& options() const { return options_; }

  // Runs `op` on the shared connection; notices when the daemon is gone.
  template <typename Op>
  auto WithClient(Op op) {
    std::lock_guard lock(client_mu_);
    return op(client_);
  }

  // Maps an error of the shared connection to what a file operation returns.
  int Errno(int err) {
    if (IsTransportError(err)) {
      SignalBroken();
      return -ENOTCONN;
    }
    return -err;
  }

  void SignalBroken() {
    std::lock_guard lock(watch_mu_);
    broken_ = true;
    watch_cv_.notify_all();
  }

  void FillStat(bool is_directory, bool writable, struct stat* st) const {
    std::memset(st, 0, sizeof(*st));
    st->st_uid = uid_;
    st->st_gid = gid_;
    if (is_directory) {
      st->st_mode = S_IFDIR | 0755;
      st->st_nlink = 2;
    } else {
      st->st_mode = S_IFREG | (writable ? 0644 : 0444);
      st->st_nlink = 1;
    }
  }

  // Probes the daemon until the connection breaks or the loop ends, then
  // takes the mount down so that nothing hangs on it.
  void StartWatcher(struct fuse* f) {
    watcher_ = std::thread([this, f] {
      std::optional<std::string> device = MountDevice(options_.mountpoint);
      std::unique_lock lock(watch_mu_);
      while (!stopping_) {
        watch_cv_.wait_for(lock, 500ms);
        if (stopping_) return;
        if (!broken_) {
          lock.unlock();
          auto listed = WithClient([](ConsumerClient& c) { return c.List(""); });
          lock.lock();
          if (!listed.ok() && IsTransportError(listed.error())) broken_ = true;
        }
        if (broken_) break;
      }
      if (stopping_) return;
      lock.unlock();
      fuse_exit(f);
      umount2(options_.mountpoint.c_str(), MNT_DETACH);
      // Wakes the loop even if files are still open on the detached mount.
      if (device) {
        // The connection is named after the device's minor number.
        std::string abort_path =
            fmt::format("/sys/fs/fuse/connections/{}/abort", device->substr(device->find(':') + 1));
        int fd = open(abort_path.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
          (void)!write(fd, "1", 1);
          close(fd);
        }
      }
    });
  }

  void StopWatcher() {
    {
      std::lock_guard lock(watch_mu_);
      stopping_ = true;
      watch_cv_.notify_all();
    }
    if (watcher_.joinable()) watcher_.join();
  }

 private:
  std::mutex client_mu_;
  ConsumerClient client_;
  MountOptions options_;
  uid_t uid_;
  gid_t gid_;

  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  bool broken_ = false;
  bool stopping_ = false;
  std::thread watcher_;
};

Server* GetServer() { return static_cast<Server*>(fuse_get_context()->private_data); }
OpenFile* GetFile(fuse_file_info* fi) { return reinterpret_cast<OpenFile*>(fi->fh); }

void* OpInit(fuse_conn_info* conn, fuse_config* cfg) {
  cfg->direct_io = 1;
  cfg->intr = 1;  // a blocked trace_pipe read must yield to signals (timeout, Ctrl-C)
  cfg->entry_timeout = 0;
  cfg->attr_timeout = 0;
  cfg->negative_timeout = 0;
  if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
  return fuse_get_context()->private_data;
}

int OpGetattr(const char* path, struct stat* st, fuse_file_info*) {
  Server* s = GetServer();
  std::string p = TreePath(path);
  if (p.empty()) {
    s->FillStat(true, false, st);
    return 0;
  }
  size_t slash = p.find_last_of('/');
  std::string parent = slash == std::string::npos ? "" : p.substr(0, slash);
  std::string name = slash == std::string::npos ? p : p.substr(slash + 1);
  auto entries = s->WithClient([&](ConsumerClient& c) { return c.List(parent); });
  if (!entries.ok()) return entries.error() == ENOTDIR ? -ENOENT : s->Errno(entries.error());
  for (const auto& [entry, is_directory] : *entries) {
    if (entry == name) {
      s->FillStat(is_directory, kWritable.contains(name), st);
      return 0;
    }
  }
  return -ENOENT;
}

int OpReaddir(const char* path, void* buf, fuse_fill_dir_t filler, off_t, fuse_file_info*, fuse_readdir_flags) {
  Server* s = GetServer();
  auto entries = s->WithClient([&](ConsumerClient& c) { return c.List(TreePath(path)); });
  if (!entries.ok()) return s->Errno(entries.error());
  filler(buf, ".", nullptr, 0, fuse_fill_dir_flags{});
  filler(buf, "..", nullptr, 0, fuse_fill_dir_flags{});
  for (const auto& [name, is_directory] : *entries) {
    struct stat st;
    s->FillStat(is_directory, kWritable.contains(name), &st);
    filler(buf, name.c_str(), &st, 0, fuse_fill_dir_flags{});
  }
  return 0;
}

void PipeThread(PipeReader* reader, ConsumerClient client, std::string path) {
  int err = client.StreamPipe(
      path,
      [reader](std::string_view chunk) {
        std::unique_lock lock(reader->mu);
        reader->cv.wait(lock, [&] { return reader->buffer.size() < kMaxPipeBufferBytes || reader->stop.load(); });
        reader->buffer.append(chunk);
        reader->cv.notify_all();
        reader->NotifyPoll();
        return !reader->stop.load();
      },
      &reader->stop);
  std::lock_guard lock(reader->mu);
  reader->done = true;
  reader->err = reader->stop.load() ? 0 : err;
  reader->cv.notify_all();
  reader->NotifyPoll();
}

int OpOpen(const char* path, fuse_file_info* fi) {
  Server* s = GetServer();
  auto file = std::make_unique<OpenFile>();
  file->path = TreePath(path);
  std::string_view name = BaseName(file->path);
  int access = fi->flags & O_ACCMODE;
  bool writing = access != O_RDONLY;
  if (writing && !kWritable.contains(name)) return -EACCES;
  fi->direct_io = 1;
  if (name == "trace_pipe") {
    if (writing) return -EACCES;
    auto client = ConsumerClient::Connect(s->options().daemon_dir);
    if (!client.ok()) return IsTransportError(client.error()) || consumer::IsNoDaemonError(client.error())
                                   ? -ENOTCONN
                                   : -client.error();
    fi->nonseekable = 1;
    file->pipe = std::make_unique<PipeReader>();
    file->pipe->thread = std::thread(PipeThread, file->pipe.get(), std::move(client).value(), file->path);
  } else {
    if (access != O_WRONLY) {
      auto text = s->WithClient([&](ConsumerClient& c) { return c.Read(file->path); });
      if (!text.ok()) return s->Errno(text.error());
      file->snapshot = std::move(text).value();
    }
    if (writing) {
      file->truncate_pending = !(fi->flags & O_APPEND);
      file->truncate_at_close =
          (fi->flags & O_TRUNC) && (name == "dynamic_events" || name == "synthetic_events" || name == "trace");
    }
  }
  fi->fh = reinterpret_cast<uint64_t>(file.release());
  return 0;
}

int OpRead(const char*, char* buf, size_t size, off_t offset, fuse_file_info* fi) {
  OpenFile* file = GetFile(fi);
  if (!file->pipe) {
    if (offset < 0) return -EINVAL;
    if (static_cast<size_t>(offset) >= file->snapshot.size()) return 0;
    size_t n = std::min(size, file->snapshot.size() - offset);
    std::memcpy(buf, file->snapshot.data() + offset, n);
    return static_cast<int>(n);
  }
  PipeReader* reader = file->pipe.get();
  std::unique_lock lock(reader->mu);
  while (reader->buffer.empty()) {
    if (reader->done) return reader->err == 0 ? 0 : -EIO;
    if (fi->flags & O_NONBLOCK) return -EAGAIN;
    reader->cv.wait_for(lock, 100ms);
    if (reader->buffer.empty() && fuse_interrupted()) return -EINTR;
  }
  size_t n = std::min(size, reader->buffer.size());
  std::memcpy(buf, reader->buffer.data(), n);
  reader->buffer.erase(0, n);
  reader->cv.notify_all();  // the stream thread may wait for room
  return static_cast<int>(n);
}

int OpWrite(const char*, const char* buf, size_t size, off_t, fuse_file_info* fi) {
  Server* s = GetServer();
  OpenFile* file = GetFile(fi);
  bool append = !file->truncate_pending;
  int err = s->WithClient(
      [&](ConsumerClient& c) { return c.Write(file->path, std::string_view(buf, size), append); });
  // The open truncates once, whether or not its first write succeeds.
  file->truncate_pending = false;
  file->truncate_at_close = false;
  if (err) return s->Errno(err);
  return static_cast<int>(size);
}

// `> dynamic_events` (or `> trace`) with nothing written still clears it.
int OpFlush(const char*, fuse_file_info* fi) {
  Server* s = GetServer();
  OpenFile* file = GetFile(fi);
  if (!file->truncate_at_close) return 0;
  file->truncate_at_close = false;
  file->truncate_pending = false;
  int err = s->WithClient([&](ConsumerClient& c) { return c.Write(file->path, "", false); });
  return err ? s->Errno(err) : 0;
}

int OpRelease(const char*, fuse_file_info* fi) {
  OpenFile* file = GetFile(fi);
  if (file->pipe) {
    {
      std::lock_guard lock(file->pipe->mu);
      file->pipe->stop = true;
      file->pipe->cv.notify_all();
    }
    if (file->pipe->thread.joinable()) file->pipe->thread.join();
    std::lock_guard lock(file->pipe->mu);
    if (file->pipe->poll_handle) {
      fuse_pollhandle_destroy(file->pipe->poll_handle);
      file->pipe->poll_handle = nullptr;
    }
  }
  delete file;
  return 0;
}

int OpPoll(const char*, fuse_file_info* fi, fuse_pollhandle* ph, unsigned* revents) {
  OpenFile* file = GetFile(fi);
  if (!file->pipe) {
    if (ph) fuse_pollhandle_destroy(ph);
    *revents = POLLIN | POLLOUT;
    return 0;
  }
  PipeReader* reader = file->pipe.get();
  std::lock_guard lock(reader->mu);
  *revents = 0;
  if (!reader->buffer.empty()) *revents |= POLLIN;
  if (reader->done) *revents |= POLLIN | (reader->err ? POLLERR : POLLHUP);
  if (ph) {
    if (*revents) {
      fuse_pollhandle_destroy(ph);
    } else {
      if (reader->poll_handle) fuse_pollhandle_destroy(reader->poll_handle);
      reader->poll_handle = ph;
    }
  }
  return 0;
}

// Shells open `>` targets with O_CREAT|O_TRUNC: existing files take it (the
// truncation is the open's, see OpOpen); new ones cannot be made, as in tracefs.
int OpTruncate(const char* path, off_t, fuse_file_info*) {
  return kWritable.contains(BaseName(path)) ? 0 : -EACCES;
}

int OpCreate(const char*, mode_t, fuse_file_info*) { return -EACCES; }

// instances/<name>: made and removed by the daemon, with tracefs's errnos.
int OpMkdir(const char* path, mode_t) {
  Server* s = GetServer();
  int err = s->WithClient([&](ConsumerClient& c) { return c.Mkdir(TreePath(path)); });
  return err ? s->Errno(err) : 0;
}

int OpRmdir(const char* path) {
  Server* s = GetServer();
  int err = s->WithClient([&](ConsumerClient& c) { return c.Rmdir(TreePath(path)); });
  return err ? s->Errno(err) : 0;
}

fuse_operations MakeOperations() {
  fuse_operations ops{};
  ops.init = OpInit;
  ops.getattr = OpGetattr;
  ops.readdir = OpReaddir;
  ops.open = OpOpen;
  ops.read = OpRead;
  ops.write = OpWrite;
  ops.flush = OpFlush;
  ops.release = OpRelease;
  ops.poll = OpPoll;
  ops.truncate = OpTruncate;
  ops.create = OpCreate;
  ops.mkdir = OpMkdir;
  ops.rmdir = OpRmdir;
  return ops;
}

}  // namespace

int Mount(ConsumerClient client, const MountOptions& options, std::string* error) {
  MountOptions resolved = options;
  char* real = realpath(options.mountpoint.c_str(), nullptr);
  if (!real) {
    int err = errno;
    *error = fmt::format("{}: {}", options.mountpoint, std::strerror(err));
    return err;
  }
  resolved.mountpoint = real;
  free(real);
  struct stat st {};
  if (stat(resolved.mountpoint.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = fmt::format("{}: not a directory", resolved.mountpoint);
    return ENOTDIR;
  }

  auto server = std::make_unique<Server>(std::move(client), resolved);
  fuse_operations ops = MakeOperations();
  std::vector<std::string> arg_strings = {"udiag", "-o",
                                          "fsname=udiag,subtype=udiag,default_permissions"};
  std::vector<char*> argv;
  for (std::string& a : arg_strings) argv.push_back(a.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  struct fuse* f = fuse_new(&args, &ops, sizeof(ops), server.get());
  if (!f) {
    *error = "cannot set up the FUSE filesystem";
    return EINVAL;
  }
  if (fuse_mount(f, resolved.mountpoint.c_str()) != 0) {
    fuse_destroy(f);
    *error = fmt::format("cannot mount on {} (is /dev/fuse there, and may you mount?)", resolved.mountpoint);
    return EPERM;
  }
  if (fuse_daemonize(options.foreground ? 1 : 0) != 0) {
    fuse_unmount(f);
    fuse_destroy(f);
    *error = "cannot go to the background";
    return ECHILD;
  }
  // From here on, in the background, this is the detached child.
  fuse_session* se = fuse_get_session(f);
  fuse_set_signal_handlers(se);
  // libfuse interrupts a thread serving an interrupted request with SIGUSR1;
  // make sure that signal only interrupts (its default action would kill us).
  struct sigaction sa {};
  sa.sa_handler = [](int) {};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, nullptr);
  server->StartWatcher(f);
  int rc = fuse_loop_mt(f, /*clone_fd=*/0);
  server->StopWatcher();
  fuse_remove_signal_handlers(se);
  fuse_unmount(f);
  fuse_destroy(f);
  if (!options.foreground) _exit(rc == 0 ? 0 : 1);
  if (rc != 0) {
    *error = "the FUSE loop failed";
    return EIO;
  }
  return 0;
}

int Unmount(const std::string& mountpoint, std::string* error) {
  if (geteuid() == 0) {
    if (umount2(mountpoint.c_str(), UMOUNT_NOFOLLOW) == 0) return 0;
    if (errno == EBUSY && umount2(mountpoint.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0) return 0;
    int err = errno;
    *error = fmt::format("{}: {}", mountpoint, std::strerror(err));
    return err;
  }
  // As a user, through the setuid helper; lazily, so a busy mount goes too.
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    *error = fmt::format("fork: {}", std::strerror(err));
    return err;
  }
  if (pid == 0) {
    execlp("fusermount3", "fusermount3", "-u", "-z", mountpoint.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  *error = fmt::format("{}: fusermount3 -u failed", mountpoint);
  return EPERM;
}

}  // namespace udiag::fuse
