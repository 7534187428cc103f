// libudiag-mmiotrace.so: mmiotrace for the process it is preloaded into.
// `udiag mmiotrace` puts it in LD_PRELOAD with the session's socket in
// $UDIAG_MMIOTRACE_SESSION (without it the library does nothing). The mmap
// family is interposed: a shared mapping of a device (see DevicePaths) gets
// a probe whose accesses become records; a writer thread ships them to the
// session. Children inherit the preload: a fork child gets its own writer
// and connection (its records carry its pid), an exec'd program loads the
// library again.
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <string>
#include <string_view>
#include <vector>

#include "mmiotrace/device_paths.h"
#include "mmiotrace/session_wire.h"
#include "mmiotrace/thread_rings.h"
#include "mmiotrace/traced_mappings.h"
#include "mmiotrace/writer.h"
#include "udiag/mmio.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {

namespace mt = udiag::mmiotrace;

struct Tracer {
  mt::ThreadRings rings;
  mt::TracedMappings mappings;
  mt::Writer writer;
  Tracer(mt::DevicePaths paths, const std::string& socket_path)
      : mappings(&rings, std::move(paths), mt::IdsPath(socket_path)), writer(&rings, socket_path) {}
};

Tracer* g_tracer = nullptr;  // set once in the constructor, before main

// Our own work maps and unmaps too (the probe engine's alias views, the id
// counter): those calls must pass straight through.
thread_local bool tls_in_hook __attribute__((tls_model("initial-exec"))) = false;

class HookScope {
 public:
  HookScope() : active_(g_tracer != nullptr && !tls_in_hook) {
    if (active_) tls_in_hook = true;
  }
  ~HookScope() {
    if (active_) tls_in_hook = false;
  }
  bool active() const { return active_; }

 private:
  bool active_;
};

std::vector<std::string> SplitPaths(const char* list) {
  std::vector<std::string> paths;
  std::string_view rest = list ? list : "";
  while (!rest.empty()) {
    size_t colon = rest.find(':');
    if (colon != 0) paths.emplace_back(rest.substr(0, colon));
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return paths;
}

void SetModeFromEnvironment() {
  std::string_view mode = getenv(mt::kEnvMode) ? getenv(mt::kEnvMode) : "";
  if (mode == "rebase-step") udiag_mmio_set_mode(UDIAG_MMIO_REBASE_STEP);
  if (mode == "single-step") udiag_mmio_set_mode(UDIAG_MMIO_SINGLE_STEP);
  if (mode == "emulate") udiag_mmio_set_mode(UDIAG_MMIO_EMULATE);
}

void AtForkPrepare() {
  g_tracer->writer.PauseForFork();
  g_tracer->mappings.LockForFork();
}
void AtForkParent() {
  g_tracer->mappings.UnlockAfterFork();
  g_tracer->writer.ResumeAfterFork();
}
void AtForkChild() {
  g_tracer->mappings.UnlockAfterFork();
  g_tracer->writer.ResumeAfterFork();
  mt::TracedMappings::RefreshPid();
  g_tracer->rings.ResetInForkChild();
  g_tracer->writer.RestartInForkChild();
}

__attribute__((constructor)) void StartTracing() {
  const char* socket_path = getenv(mt::kEnvSession);
  if (!socket_path || !*socket_path) return;
  SetModeFromEnvironment();
  tls_in_hook = true;
  g_tracer = new Tracer(mt::DevicePaths(SplitPaths(getenv(mt::kEnvMaps))), socket_path);
  g_tracer->writer.Start();
  pthread_atfork(AtForkPrepare, AtForkParent, AtForkChild);
  tls_in_hook = false;
}

// Runs after main returns or exit() is called: what is still queued is sent.
// (_exit and crashes lose the last few milliseconds of records.)
__attribute__((destructor)) void StopTracing() {
  if (g_tracer) g_tracer->writer.Stop();
}

void* RealMmap(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
  return reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, offset));
}

}  // namespace

EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
  void* result = RealMmap(addr, len, prot, flags, fd, offset);
  if (result != MAP_FAILED && fd >= 0) {
    HookScope scope;
    if (scope.active()) g_tracer->mappings.OnMap(result, len, flags, fd, offset);
  }
  return result;
}

EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
  return mmap(addr, len, prot, flags, fd, offset);
}

EXPORT int munmap(void* addr, size_t len) {
  {
    HookScope scope;
    if (scope.active()) g_tracer->mappings.OnUnmap(addr, len);
  }
  return static_cast<int>(syscall(SYS_munmap, addr, len));
}

EXPORT void* mremap(void* old_addr, size_t old_len, size_t new_len, int flags, ...) {
  void* new_addr = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list args;
    va_start(args, flags);
    new_addr = va_arg(args, void*);
    va_end(args);
  }
  HookScope scope;
  int token = scope.active() ? g_tracer->mappings.BeforeRemap(old_addr, old_len) : -1;
  void* result = reinterpret_cast<void*>(syscall(SYS_mremap, old_addr, old_len, new_len, flags, new_addr));
  if (scope.active()) g_tracer->mappings.AfterRemap(token, old_addr, old_len, result, new_len);
  return result;
}
