// The device mappings a traced process has made: for each, a region and a
// probe in the probe engine (include/udiag/mmio.h), a map id unique in the
// session, and MAP/UNMAP records. The probe's post handler queues an R, W or
// UNKNOWN record per access on the thread's ring (async-signal-safe).
// Control-path calls (mmap hooks) only; they serialise on one mutex.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "mmiotrace/device_paths.h"
#include "mmiotrace/thread_rings.h"
#include "udiag/mmio.h"

namespace udiag::mmiotrace {

class TracedMappings {
 public:
  static constexpr size_t kMaxMappings = 256;

  // `ids_path`: the session's shared id counter (see session_wire.h); ids
  // come from a local counter when it cannot be mapped.
  TracedMappings(ThreadRings* rings, DevicePaths paths, const std::string& ids_path);

  // After a successful mmap of `fd` at `offset`: traces the mapping if it is
  // a shared mapping of a device (DevicePaths).
  void OnMap(void* addr, size_t len, int flags, int fd, off_t offset);
  // Before munmap: a traced mapping that [addr, addr+len) overlaps stops
  // being traced as a whole (UNMAP), like iounmap.
  void OnUnmap(void* addr, size_t len);
  // Around mremap of `old_addr`: detaches a traced mapping there before, and
  // traces it again at its new place (or the old one, if mremap failed).
  // Returns a token for AfterRemap: -1 when nothing was traced there.
  int BeforeRemap(void* old_addr, size_t old_len);
  void AfterRemap(int token, void* old_addr, size_t old_len, void* new_addr, size_t new_len);

  // fork() support: hold the mutex across fork, release it on both sides.
  void LockForFork() { mutex_.lock(); }
  void UnlockAfterFork() { mutex_.unlock(); }

  // The pid that records carry; call again in a fork child.
  static void RefreshPid();

 private:
  struct Mapping {
    bool used = false;
    int fd = -1;  // a dup of the mapped fd, to map the alias again after mremap
    off_t offset = 0;
    int flags = 0;
    uint64_t phys = 0;
    int32_t id = 0;
    ThreadRings* rings = nullptr;
    udiag_mmio_probe probe = {};
  };

  static void OnAccess(udiag_mmio_probe* probe, const udiag_mmio_access* access);

  int32_t NextId();
  void PushMapRecord(RecordKind kind, const Mapping& mapping);
  // Under mutex_: trace [addr, addr+len) of `fd` (now owned) as mapping `slot`.
  bool Attach(Mapping& slot, uintptr_t addr, size_t len, int flags, int fd, off_t offset, uint64_t phys);
  // Under mutex_: stop tracing; keeps the fd unless `close_fd`.
  void Detach(Mapping& mapping, bool close_fd);

  ThreadRings* rings_;
  DevicePaths paths_;
  uint32_t* shared_next_id_ = nullptr;
  uint32_t local_next_id_ = 0;
  std::mutex mutex_;
  Mapping mappings_[kMaxMappings];
};

}  // namespace udiag::mmiotrace
