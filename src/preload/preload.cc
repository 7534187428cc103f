// libudiag-preload.so: makes the kernel's user_events data file work for
// unmodified programs (LD_PRELOAD). Opens of .../user_events_data under a
// tracefs location become udiag_open(); ioctl/write/writev/pwrite/close and
// the dup family on those descriptors go to the library. The historic ABIs
// work too: mmap of .../user_events_status (5.18-6.3) and the RFC's
// /dev/udiag. perf_event_open on udiag's ids is emulated (perf_event.h);
// tracefs mounts over udiag run's view keep the view. Everything else passes
// straight through: the check for an unrelated descriptor is one load from a
// static table. See docs/dropin.md.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ipc/protocol.h"
#include "producer/client.h"
#include "producer/data_files.h"
#include "preload/perf_event.h"
#include "producer/legacy_abi.h"
#include "udiag/udiag.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// ---- Real functions -------------------------------------------------------

template <typename Fn>
struct Real {
  const char* name;
  std::atomic<Fn> fn{nullptr};
  Fn get() {
    Fn f = fn.load(std::memory_order_relaxed);
    if (__builtin_expect(f != nullptr, 1)) return f;
    f = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
    fn.store(f, std::memory_order_relaxed);
    return f;
  }
};

using OpenFn = int (*)(const char*, int, ...);
using OpenAtFn = int (*)(int, const char*, int, ...);
using Open2Fn = int (*)(const char*, int);
using OpenAt2Fn = int (*)(int, const char*, int);

Real<OpenFn> real_open{"open"};
Real<OpenFn> real_open64{"open64"};
Real<OpenAtFn> real_openat{"openat"};
Real<OpenAtFn> real_openat64{"openat64"};
Real<Open2Fn> real___open_2{"__open_2"};
Real<Open2Fn> real___open64_2{"__open64_2"};
Real<OpenAt2Fn> real___openat_2{"__openat_2"};
Real<OpenAt2Fn> real___openat64_2{"__openat64_2"};
Real<int (*)(int, unsigned long, ...)> real_ioctl{"ioctl"};
Real<ssize_t (*)(int, const void*, size_t)> real_write{"write"};
Real<ssize_t (*)(int, const iovec*, int)> real_writev{"writev"};
Real<ssize_t (*)(int, const void*, size_t, off_t)> real_pwrite{"pwrite"};
Real<ssize_t (*)(int, const void*, size_t, off64_t)> real_pwrite64{"pwrite64"};
Real<int (*)(int)> real_close{"close"};
Real<int (*)(int)> real_dup{"dup"};
Real<int (*)(int, int)> real_dup2{"dup2"};
Real<int (*)(int, int, int)> real_dup3{"dup3"};
Real<int (*)(int, int, ...)> real_fcntl{"fcntl"};
Real<int (*)(int, int, ...)> real_fcntl64{"fcntl64"};
Real<int (*)(unsigned, unsigned, int)> real_close_range{"close_range"};
Real<void (*)(int)> real_closefrom{"closefrom"};
Real<void* (*)(void*, size_t, int, int, int, off_t)> real_mmap{"mmap"};
Real<void* (*)(void*, size_t, int, int, int, off64_t)> real_mmap64{"mmap64"};
Real<int (*)(void*, size_t)> real_munmap{"munmap"};
Real<ssize_t (*)(int, void*, size_t)> real_read{"read"};
Real<ssize_t (*)(int, void*, size_t, size_t)> real___read_chk{"__read_chk"};
Real<long (*)(long, ...)> real_syscall{"syscall"};
Real<int (*)(const char*, const char*, const char*, unsigned long, const void*)> real_mount{"mount"};
Real<int (*)(const char*)> real_umount{"umount"};
Real<int (*)(const char*, int)> real_umount2{"umount2"};
Real<int (*)(const char*, struct stat*)> real_stat{"stat"};
Real<int (*)(const char*, struct stat64*)> real_stat64{"stat64"};
Real<int (*)(int, const char*, struct stat*, int)> real_fstatat{"fstatat"};
Real<int (*)(int, const char*, struct stat64*, int)> real_fstatat64{"fstatat64"};
Real<int (*)(const char*, struct stat*)> real_lstat{"lstat"};
Real<int (*)(const char*, struct stat64*)> real_lstat64{"lstat64"};
Real<int (*)(int, const char*, int, unsigned, struct statx*)> real_statx{"statx"};
Real<int (*)(const char*, int)> real_access{"access"};
Real<int (*)(int, const char*, int, int)> real_faccessat{"faccessat"};

// ---- Which descriptors are data files --------------------------------------

enum : uint8_t {
  kOther = 0,      // not a data file (or unknown: the common case)
  kData = 1,       // a udiag data file
  kCandidate = 2,  // an inherited AF_UNIX seqpacket socket, not yet asked about
  kStatus = 3,     // user_events_status: mmap gives the legacy status page
  kRfc = 4,        // /dev/udiag: a data file speaking the RFC's ABI
  kPerf = 5,       // a perf_event fd on a udiag event (perf_event.h)
};

constexpr int kDirect = 1 << 16;
std::atomic<uint8_t> g_state[kDirect];  // zero-initialised: usable before any constructor
std::atomic<bool> g_far_used{false};
std::mutex g_far_mu;
std::unordered_map<int, uint8_t>* g_far;  // fds >= kDirect; under g_far_mu

inline uint8_t State(int fd) {
  if (static_cast<unsigned>(fd) < kDirect) return g_state[fd].load(std::memory_order_relaxed);
  if (fd < 0 || !g_far_used.load(std::memory_order_relaxed)) return kOther;
  std::lock_guard lock(g_far_mu);
  auto it = g_far->find(fd);
  return it == g_far->end() ? static_cast<uint8_t>(kOther) : it->second;
}

void SetState(int fd, uint8_t state) {
  if (fd < 0) return;
  if (fd < kDirect) {
    g_state[fd].store(state, std::memory_order_relaxed);
    return;
  }
  std::lock_guard lock(g_far_mu);
  if (state == kOther) {
    if (g_far) g_far->erase(fd);
    return;
  }
  if (!g_far) g_far = new std::unordered_map<int, uint8_t>;
  (*g_far)[fd] = state;
  g_far_used.store(true, std::memory_order_relaxed);
}

// A descriptor number that was a data file now names something else (it
// was closed behind our back, e.g. by a raw system call).
[[gnu::cold, gnu::noinline]] void ForgetStale(int fd) {
  SetState(fd, kOther);
  udiag::producer::DataFiles().Remove(fd);
}

inline void FreshFd(int fd) {
  if (fd >= 0 && __builtin_expect(State(fd) != kOther, 0)) ForgetStale(fd);
}

bool IsSeqpacketUnixSocket(int fd) {
  int type = 0, domain = 0;
  socklen_t len = sizeof(type);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET) return false;
  len = sizeof(domain);
  return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_UNIX;
}

// Asks the daemon whether `fd` is one of its data files (a descriptor
// inherited across exec, or received over a socket). Claiming it also makes
// its events writable by this process, as after fork.
[[gnu::cold, gnu::noinline]] bool Probe(int fd) {
  if (!IsSeqpacketUnixSocket(fd)) return false;
  int saved = errno;
  bool yes = false;
  if (auto* client = udiag::producer::Client::Get()) {
    udiag::producer::Reply reply;
    int fds[] = {fd};
    yes = client->Call(udiag::ipc::MsgType::kClaimDataFile, nullptr, fds, &reply) == 0 && reply.error == 0;
  }
  errno = saved;
  return yes;
}

// What a candidate turned out to be, after asking the daemon.
[[gnu::cold, gnu::noinline]] uint8_t Settle(int fd) {
  uint8_t kind = Probe(fd) ? kData : kOther;
  SetState(fd, kind);
  return kind;
}

// What `fd` is: kOther (the common case: one load), kData, kRfc or kStatus.
inline uint8_t Kind(int fd) {
  uint8_t state = State(fd);
  return __builtin_expect(state == kCandidate, 0) ? Settle(fd) : state;
}

// A descriptor numbered `to` is now a copy of `from` (dup family).
void CopyState(int from, int to) {
  if (to < 0) return;
  uint8_t state = State(from);
  if (state == kPerf) state = kOther;  // perf_event.cc knows the original number only
  if (State(to) == kData && state == kOther) udiag::producer::DataFiles().Remove(to);
  if (State(to) != state) SetState(to, state);
}

// Descriptors this image inherited that may be data files: looked at once,
// when the library loads, and asked about only when used.
__attribute__((constructor)) void FindInheritedCandidates() {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  int self = dirfd(dir);
  while (dirent* entry = readdir(dir)) {
    char* end;
    long fd = strtol(entry->d_name, &end, 10);
    if (*end || end == entry->d_name || fd == self) continue;
    if (IsSeqpacketUnixSocket(static_cast<int>(fd))) SetState(static_cast<int>(fd), kCandidate);
  }
  closedir(dir);
}

// ---- Which paths are the data file -----------------------------------------

constexpr char kDataName[] = "user_events_data";
constexpr char kStatusName[] = "user_events_status";
constexpr char kRfcDevice[] = "/dev/udiag";

// Lexically normalises an absolute path: no "//", "." or "..".
std::string Normalise(const std::string& path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string part = path.substr(i, j - i);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    i = j + 1;
  }
  std::string out;
  for (auto& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

// Decodes the octal escapes of /proc/mounts (\040 for a space...).
std::string Unescape(const char* s) {
  std::string out;
  for (; *s; ++s) {
    if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] && s[3]) {
      out += static_cast<char>((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
      s += 3;
    } else {
      out += *s;
    }
  }
  return out;
}

const std::vector<std::string>& TracefsDirs() {
  static const std::vector<std::string>* dirs = [] {
    auto* v = new std::vector<std::string>{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};
    int fd = real_open.get()("/proc/mounts", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return v;
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, n);
    real_close.get()(fd);
    size_t pos = 0;
    while (pos < text.size()) {
      size_t eol = text.find('\n', pos);
      if (eol == std::string::npos) eol = text.size();
      std::string line = text.substr(pos, eol - pos);
      pos = eol + 1;
      char dev[512], dir[4096], type[64];
      if (sscanf(line.c_str(), "%511s %4095s %63s", dev, dir, type) == 3 && strcmp(type, "tracefs") == 0) {
        v->push_back(Normalise(Unescape(dir)));
      }
    }
    return v;
  }();
  return *dirs;
}

enum class Special { kNone, kDataFile, kStatusFile, kRfcDevice };

bool EndsWithName(const char* path, size_t len, std::string_view name) {
  return len >= name.size() && memcmp(path + len - name.size(), name.data(), name.size()) == 0 &&
         (len == name.size() || path[len - name.size() - 1] == '/');
}

// Absolute, normalised form of `path` relative to `dirfd`; empty on failure.
std::string FullPath(int dirfd, const char* path) {
  int saved = errno;
  std::string full;
  if (path[0] == '/') {
    full = path;
  } else {
    char base[4096];
    if (dirfd == AT_FDCWD) {
      if (!getcwd(base, sizeof base)) return {};
    } else {
      std::string link = "/proc/self/fd/" + std::to_string(dirfd);
      ssize_t n = readlink(link.c_str(), base, sizeof base - 1);
      if (n <= 0) return {};
      base[n] = 0;
    }
    full.assign(base);
    full += '/';
    full += path;
  }
  errno = saved;
  return Normalise(full);
}

bool InTracefsDir(const std::string& normal) {
  std::string_view dir = std::string_view(normal).substr(0, normal.rfind('/'));
  if (dir.empty()) dir = "/";
  for (const auto& d : TracefsDirs()) {
    if (d == dir) return true;
  }
  return false;
}

// What `path` (relative to `dirfd`) names. Cheap for every other path: a
// suffix compare.
Special Classify(int dirfd, const char* path) {
  if (!path) return Special::kNone;
  size_t len = strlen(path);
  if (EndsWithName(path, len, kDataName)) {
    std::string full = FullPath(dirfd, path);
    return !full.empty() && InTracefsDir(full) ? Special::kDataFile : Special::kNone;
  }
  if (EndsWithName(path, len, kStatusName)) {
    std::string full = FullPath(dirfd, path);
    return !full.empty() && InTracefsDir(full) ? Special::kStatusFile : Special::kNone;
  }
  if (EndsWithName(path, len, "udiag")) {
    return FullPath(dirfd, path) == kRfcDevice ? Special::kRfcDevice : Special::kNone;
  }
  return Special::kNone;
}

int OpenData(int flags, uint8_t state) {
  int fd = udiag_open();
  if (fd < 0) return -1;
  if (flags & O_CLOEXEC) real_fcntl.get()(fd, F_SETFD, FD_CLOEXEC);
  SetState(fd, state);
  return fd;
}

inline int OpenResult(int fd) {
  FreshFd(fd);
  return fd;
}

// The status file is opened for real (under `udiag run` it is the daemon's
// text); its descriptor also maps the legacy status page.
template <typename OpenReal>
int OpenStatus(OpenReal open_real) {
  int fd = open_real();
  if (fd >= 0) {
    FreshFd(fd);
    SetState(fd, kStatus);
  }
  return fd;
}

// Opens `path`: the special files of the user_events ABIs become udiag
// descriptors; everything else is `open_real()`.
template <typename OpenReal>
[[gnu::always_inline]] inline int Open(int dirfd, const char* path, int flags, OpenReal open_real) {
  switch (Classify(dirfd, path)) {
    case Special::kNone: return OpenResult(open_real());
    case Special::kDataFile: return OpenData(flags, kData);
    case Special::kRfcDevice: return OpenData(flags, kRfc);
    case Special::kStatusFile: return OpenStatus(open_real);
  }
  return OpenResult(open_real());
}

inline bool NeedsMode(int flags) { return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE; }

inline bool IsDiagRequest(unsigned long request) {
  return request == DIAG_IOCSREG || request == DIAG_IOCSDEL || request == DIAG_IOCSUNREG;
}

// The RFC's device had only write(): the kernel turns writev into one write
// per segment.
[[gnu::cold, gnu::noinline]] ssize_t RfcWritev(int fd, const iovec* iov, int iovcnt) {
  ssize_t total = 0;
  for (int i = 0; i < iovcnt; ++i) {
    ssize_t n = udiag::producer::legacy::RfcWrite(fd, iov[i].iov_base, iov[i].iov_len);
    if (n < 0) return total ? total : n;
    total += n;
  }
  return total;
}

[[gnu::cold, gnu::noinline]] void* MapSpecial(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
  if (State(fd) == kPerf) return udiag::preload::PerfMmap(addr, len, prot, flags, fd, offset);
  return udiag::producer::legacy::MapStatusPage(addr, len, prot, flags, offset, State(fd) == kRfc);
}

inline bool MapsSpecial(int fd) {
  uint8_t state = State(fd);
  return __builtin_expect(state == kStatus || state == kRfc || state == kPerf, 0);
}

// A write to a data file succeeded: perf events on this process's events
// get their sample (perf_event.h); one relaxed load when there are none.
inline ssize_t AfterDataWrite(int fd, const iovec* iov, int iovcnt, ssize_t written) {
  if (__builtin_expect(written >= 0 && udiag::preload::PerfActive(), 0)) {
    udiag::preload::PerfOnWrite(fd, iov, iovcnt);
  }
  return written;
}

inline ssize_t WriteData(int fd, const void* buf, size_t count) {
  iovec one{const_cast<void*>(buf), count};
  return AfterDataWrite(fd, &one, 1, udiag_write(fd, buf, count));
}

// ---- tracefs mounts over udiag's view ------------------------------------------

constexpr long kFuseMagic = 0x65735546;

// Under `udiag run` the traced directories are udiag's FUSE view. A program
// that mounts tracefs there (the kernel selftests do when README is missing)
// keeps the view: the mount is a no-op that succeeds, and so is its umount.
std::mutex g_mounts_mu;
std::vector<std::string>* g_kept_views;  // under g_mounts_mu: one entry per no-op mount

bool IsUdiagView(const char* target) {
  if (!target) return false;
  std::string full = Normalise(FullPath(AT_FDCWD, target));
  bool traced = false;
  for (const auto& d : TracefsDirs()) traced = traced || d == full;
  struct statfs fs;
  return traced && statfs(full.c_str(), &fs) == 0 && fs.f_type == kFuseMagic;
}

[[gnu::cold]] bool KeepViewOnMount(const char* target, const char* type) {
  if (!type || strcmp(type, "tracefs") != 0 || !IsUdiagView(target)) return false;
  std::lock_guard lock(g_mounts_mu);
  if (!g_kept_views) g_kept_views = new std::vector<std::string>;
  g_kept_views->push_back(Normalise(FullPath(AT_FDCWD, target)));
  return true;
}

[[gnu::cold]] bool KeepViewOnUmount(const char* target) {
  if (!target) return false;
  std::string full = Normalise(FullPath(AT_FDCWD, target));
  std::lock_guard lock(g_mounts_mu);
  if (!g_kept_views) return false;
  auto it = std::find(g_kept_views->begin(), g_kept_views->end(), full);
  if (it == g_kept_views->end()) return false;
  g_kept_views->erase(it);
  return true;
}

// ---- stat/access of user_events_data -------------------------------------------

// The data file exists for the preload's programs even where the kernel has
// no user_events (programs stat() it to decide whether user_events exists).
template <typename Stat>
[[gnu::cold, gnu::noinline]] int StatMissing(int dirfd, const char* path, Stat* st, int result) {
  if (result == 0 || errno != ENOENT || Classify(dirfd, path) != Special::kDataFile) return result;
  memset(st, 0, sizeof(*st));
  st->st_mode = S_IFREG | 0666;
  st->st_nlink = 1;
  st->st_blksize = 4096;
  return 0;
}

[[gnu::cold, gnu::noinline]] int StatxMissing(int dirfd, const char* path, struct statx* st, int result) {
  if (result == 0 || errno != ENOENT || Classify(dirfd, path) != Special::kDataFile) return result;
  memset(st, 0, sizeof(*st));
  st->stx_mask = STATX_TYPE | STATX_MODE | STATX_NLINK | STATX_UID | STATX_GID | STATX_SIZE;
  st->stx_mode = S_IFREG | 0666;
  st->stx_nlink = 1;
  st->stx_blksize = 4096;
  return 0;
}

[[gnu::cold, gnu::noinline]] int AccessMissing(int dirfd, const char* path, int result) {
  if (result == 0 || errno != ENOENT || Classify(dirfd, path) != Special::kDataFile) return result;
  return 0;
}

[[gnu::cold, gnu::noinline]] int DupFcntl(Real<int (*)(int, int, ...)>& real, int fd, int cmd, void* arg) {
  int r = real.get()(fd, cmd, arg);
  if (r >= 0) CopyState(fd, r);
  return r;
}

}  // namespace

// ---- open ------------------------------------------------------------------

#define UDIAG_OPEN_WRAPPER(fn, real)                                \
  EXPORT int fn(const char* path, int flags, ...) {                 \
    mode_t mode = 0;                                                \
    if (NeedsMode(flags)) {                                         \
      va_list ap;                                                   \
      va_start(ap, flags);                                          \
      mode = va_arg(ap, mode_t);                                    \
      va_end(ap);                                                   \
    }                                                               \
    return Open(AT_FDCWD, path, flags, [&] { return real.get()(path, flags, mode); }); \
  }
#define UDIAG_OPENAT_WRAPPER(fn, real)                              \
  EXPORT int fn(int dirfd, const char* path, int flags, ...) {      \
    mode_t mode = 0;                                                \
    if (NeedsMode(flags)) {                                         \
      va_list ap;                                                   \
      va_start(ap, flags);                                          \
      mode = va_arg(ap, mode_t);                                    \
      va_end(ap);                                                   \
    }                                                               \
    return Open(dirfd, path, flags, [&] { return real.get()(dirfd, path, flags, mode); }); \
  }

UDIAG_OPEN_WRAPPER(open, real_open)
UDIAG_OPEN_WRAPPER(open64, real_open64)
UDIAG_OPENAT_WRAPPER(openat, real_openat)
UDIAG_OPENAT_WRAPPER(openat64, real_openat64)

EXPORT int __open_2(const char* path, int flags) {
  return Open(AT_FDCWD, path, flags, [&] { return real___open_2.get()(path, flags); });
}
EXPORT int __open64_2(const char* path, int flags) {
  return Open(AT_FDCWD, path, flags, [&] { return real___open64_2.get()(path, flags); });
}
EXPORT int __openat_2(int dirfd, const char* path, int flags) {
  return Open(dirfd, path, flags, [&] { return real___openat_2.get()(dirfd, path, flags); });
}
EXPORT int __openat64_2(int dirfd, const char* path, int flags) {
  return Open(dirfd, path, flags, [&] { return real___openat64_2.get()(dirfd, path, flags); });
}

// ---- ioctl -----------------------------------------------------------------

EXPORT int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  uint8_t kind = Kind(fd);
  if (kind == kData) return udiag_ioctl(fd, request, arg);
  if (kind == kRfc) return udiag::producer::legacy::RfcIoctl(fd, request, arg);
  if (kind == kPerf) return udiag::preload::PerfIoctl(fd, request, arg);
  // An inherited or received data file we have not seen yet.
  if (__builtin_expect(IsDiagRequest(request), 0) && kind == kOther && Probe(fd)) {
    SetState(fd, kData);
    return udiag_ioctl(fd, request, arg);
  }
  return real_ioctl.get()(fd, request, arg);
}

// ---- write -----------------------------------------------------------------

EXPORT ssize_t write(int fd, const void* buf, size_t count) {
  uint8_t kind = Kind(fd);
  if (kind == kData) return WriteData(fd, buf, count);
  if (kind == kRfc) return udiag::producer::legacy::RfcWrite(fd, buf, count);
  return real_write.get()(fd, buf, count);
}

EXPORT ssize_t writev(int fd, const struct iovec* iov, int iovcnt) {
  uint8_t kind = Kind(fd);
  if (kind == kData) return AfterDataWrite(fd, iov, iovcnt, udiag_writev(fd, iov, iovcnt));
  if (kind == kRfc) return RfcWritev(fd, iov, iovcnt);
  return real_writev.get()(fd, iov, iovcnt);
}

// The offset is ignored on a data file, as by the kernel's write_iter.
EXPORT ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) {
  uint8_t kind = Kind(fd);
  if (kind == kData) return WriteData(fd, buf, count);
  if (kind == kRfc) return udiag::producer::legacy::RfcWrite(fd, buf, count);
  return real_pwrite.get()(fd, buf, count, offset);
}

EXPORT ssize_t pwrite64(int fd, const void* buf, size_t count, off64_t offset) {
  uint8_t kind = Kind(fd);
  if (kind == kData) return WriteData(fd, buf, count);
  if (kind == kRfc) return udiag::producer::legacy::RfcWrite(fd, buf, count);
  return real_pwrite64.get()(fd, buf, count, offset);
}

// ---- close and the dup family ------------------------------------------------

EXPORT int close(int fd) {
  uint8_t state = State(fd);
  if (__builtin_expect(state != kOther, 0)) {
    SetState(fd, kOther);
    if (state == kStatus) return real_close.get()(fd);
    if (state == kPerf) return udiag::preload::PerfClose(fd);
    return udiag_close(fd);  // forgets the library's mirror, then closes
  }
  return real_close.get()(fd);
}

EXPORT int close_range(unsigned first, unsigned last, int flags) {
  int r = real_close_range.get()(first, last, flags);
  if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC)) {
    for (unsigned fd = first; fd <= last && fd < static_cast<unsigned>(kDirect); ++fd) {
      if (g_state[fd].load(std::memory_order_relaxed) != kOther) ForgetStale(static_cast<int>(fd));
    }
  }
  return r;
}

EXPORT void closefrom(int lowfd) {
  real_closefrom.get()(lowfd);
  for (int fd = lowfd < 0 ? 0 : lowfd; fd < kDirect; ++fd) {
    if (g_state[fd].load(std::memory_order_relaxed) != kOther) ForgetStale(fd);
  }
}

EXPORT int dup(int fd) {
  int r = real_dup.get()(fd);
  if (r >= 0) CopyState(fd, r);
  return r;
}

EXPORT int dup2(int oldfd, int newfd) {
  int r = real_dup2.get()(oldfd, newfd);
  if (r >= 0 && oldfd != newfd) CopyState(oldfd, r);
  return r;
}

EXPORT int dup3(int oldfd, int newfd, int flags) {
  int r = real_dup3.get()(oldfd, newfd, flags);
  if (r >= 0) CopyState(oldfd, r);
  return r;
}

EXPORT int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) return DupFcntl(real_fcntl, fd, cmd, arg);
  return real_fcntl.get()(fd, cmd, arg);
}

EXPORT int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) return DupFcntl(real_fcntl64, fd, cmd, arg);
  return real_fcntl64.get()(fd, cmd, arg);
}

// ---- mmap of the legacy status page -------------------------------------------

EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
  if (fd >= 0 && MapsSpecial(fd)) return MapSpecial(addr, len, prot, flags, fd, offset);
  return real_mmap.get()(addr, len, prot, flags, fd, offset);
}

EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off64_t offset) {
  if (fd >= 0 && MapsSpecial(fd)) return MapSpecial(addr, len, prot, flags, fd, offset);
  return real_mmap64.get()(addr, len, prot, flags, fd, offset);
}

EXPORT int munmap(void* addr, size_t len) {
  int r = real_munmap.get()(addr, len);
  if (r == 0) udiag::producer::legacy::ForgetStatusViews(addr, len);
  return r;
}

// ---- perf_event_open and the perf fd's read ------------------------------------

// glibc has no perf_event_open(): programs call syscall(). The six
// arguments are passed on as the kernel takes them, whatever the number.
EXPORT long syscall(long number, ...) {
  va_list ap;
  va_start(ap, number);
  long a[6];
  for (long& arg : a) arg = va_arg(ap, long);
  va_end(ap);
  if (__builtin_expect(number == SYS_perf_event_open, 0)) {
    long fd;
    if (udiag::preload::PerfOpen(reinterpret_cast<const perf_event_attr*>(a[0]), static_cast<pid_t>(a[1]),
                                 static_cast<int>(a[2]), static_cast<int>(a[3]), static_cast<unsigned long>(a[4]),
                                 &fd)) {
      if (fd >= 0) {
        FreshFd(static_cast<int>(fd));
        SetState(static_cast<int>(fd), kPerf);
      }
      return fd;
    }
  }
  return real_syscall.get()(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

EXPORT ssize_t read(int fd, void* buf, size_t count) {
  if (__builtin_expect(State(fd) == kPerf, 0)) return udiag::preload::PerfRead(fd, buf, count);
  return real_read.get()(fd, buf, count);
}

// The fortified read (_FORTIFY_SOURCE with a known buffer size).
EXPORT ssize_t __read_chk(int fd, void* buf, size_t count, size_t buflen) {
  if (__builtin_expect(State(fd) == kPerf, 0) && count <= buflen) return udiag::preload::PerfRead(fd, buf, count);
  return real___read_chk.get()(fd, buf, count, buflen);
}

// ---- mount/umount of tracefs over the view -------------------------------------

EXPORT int mount(const char* source, const char* target, const char* type, unsigned long flags, const void* data) {
  if (KeepViewOnMount(target, type)) return 0;
  return real_mount.get()(source, target, type, flags, data);
}

EXPORT int umount(const char* target) {
  if (KeepViewOnUmount(target)) return 0;
  return real_umount.get()(target);
}

EXPORT int umount2(const char* target, int flags) {
  if (KeepViewOnUmount(target)) return 0;
  return real_umount2.get()(target, flags);
}

// ---- stat/access ----------------------------------------------------------------

EXPORT int stat(const char* path, struct stat* st) {
  return StatMissing(AT_FDCWD, path, st, real_stat.get()(path, st));
}
EXPORT int stat64(const char* path, struct stat64* st) {
  return StatMissing(AT_FDCWD, path, st, real_stat64.get()(path, st));
}
EXPORT int fstatat(int dirfd, const char* path, struct stat* st, int flags) {
  return StatMissing(dirfd, path, st, real_fstatat.get()(dirfd, path, st, flags));
}
EXPORT int fstatat64(int dirfd, const char* path, struct stat64* st, int flags) {
  return StatMissing(dirfd, path, st, real_fstatat64.get()(dirfd, path, st, flags));
}
EXPORT int lstat(const char* path, struct stat* st) {
  return StatMissing(AT_FDCWD, path, st, real_lstat.get()(path, st));
}
EXPORT int lstat64(const char* path, struct stat64* st) {
  return StatMissing(AT_FDCWD, path, st, real_lstat64.get()(path, st));
}
EXPORT int statx(int dirfd, const char* path, int flags, unsigned mask, struct statx* st) {
  return StatxMissing(dirfd, path, st, real_statx.get()(dirfd, path, flags, mask, st));
}
EXPORT int access(const char* path, int mode) {
  return AccessMissing(AT_FDCWD, path, real_access.get()(path, mode));
}
EXPORT int faccessat(int dirfd, const char* path, int mode, int flags) {
  return AccessMissing(dirfd, path, real_faccessat.get()(dirfd, path, mode, flags));
}
