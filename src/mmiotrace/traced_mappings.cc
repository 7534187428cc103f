#include "mmiotrace/traced_mappings.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>

namespace udiag::mmiotrace {
namespace {

std::atomic<pid_t> g_pid{0};

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

std::string FdPath(int fd) {
  char link[64];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  char target[4096];
  ssize_t n = readlink(link, target, sizeof(target) - 1);
  return n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string();
}

uint64_t LittleEndian(const uint8_t* bytes, size_t n) {
  uint64_t value = 0;
  for (size_t i = 0; i < n; ++i) value |= uint64_t{bytes[i]} << (8 * i);
  return value;
}

}  // namespace

void TracedMappings::RefreshPid() { g_pid.store(getpid(), std::memory_order_relaxed); }

TracedMappings::TracedMappings(ThreadRings* rings, DevicePaths paths, const std::string& ids_path)
    : rings_(rings), paths_(std::move(paths)) {
  RefreshPid();
  int fd = open(ids_path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  void* counter = mmap(nullptr, sizeof(uint32_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (counter != MAP_FAILED) shared_next_id_ = static_cast<uint32_t*>(counter);
}

int32_t TracedMappings::NextId() {
  uint32_t* counter = shared_next_id_ ? shared_next_id_ : &local_next_id_;
  return static_cast<int32_t>(std::atomic_ref(*counter).fetch_add(1) + 1);  // ids start at 1
}

// Runs in signal context: only the ring and the probe's immutable data.
void TracedMappings::OnAccess(udiag_mmio_probe* probe, const udiag_mmio_access* access) {
  const auto* mapping = static_cast<const Mapping*>(probe->priv);
  Record record;
  record.ts_ns = NowNs();
  record.map_id = mapping->id;
  record.pid = g_pid.load(std::memory_order_relaxed);
  record.pc = access->ip;
  record.phys = mapping->phys + (access->addr - probe->addr);
  if (!access->decoded) {
    record.kind = RecordKind::kUnknown;
    std::memcpy(record.opcode, access->insn, std::min<size_t>(3, access->insn_len));
    mapping->rings->Push(record);
    return;
  }
  // A read-modify-write is logged as the write it ends with.
  record.kind = (access->dir & UDIAG_MMIO_WRITE) ? RecordKind::kWrite : RecordKind::kRead;
  // mmiotrace's value is one unsigned long: wider (vector) accesses become
  // one line per 8 bytes.
  for (uint32_t done = 0; done < access->width; done += 8) {
    uint32_t width = std::min<uint32_t>(8, access->width - done);
    record.width = static_cast<uint8_t>(width);
    record.value = access->value_valid ? LittleEndian(access->value + done, width) : 0;
    mapping->rings->Push(record);
    record.phys += 8;
  }
}

void TracedMappings::PushMapRecord(RecordKind kind, const Mapping& mapping) {
  Record record;
  record.ts_ns = NowNs();
  record.kind = kind;
  record.map_id = mapping.id;
  record.pid = g_pid.load(std::memory_order_relaxed);
  record.phys = mapping.phys;
  record.value = mapping.probe.addr;
  record.len = mapping.probe.len;
  rings_->Push(record);
}

bool TracedMappings::Attach(Mapping& slot, uintptr_t addr, size_t len, int flags, int fd, off_t offset,
                            uint64_t phys) {
  void* start = reinterpret_cast<void*>(addr);
  if (udiag_mmio_register_region(start, len, fd, offset) != 0) {
    close(fd);
    slot.fd = -1;
    return false;
  }
  slot.used = true;
  slot.fd = fd;
  slot.offset = offset;
  slot.flags = flags;
  slot.phys = phys;
  slot.rings = rings_;
  slot.probe = {};
  slot.probe.addr = addr;
  slot.probe.len = len;
  slot.probe.post = &TracedMappings::OnAccess;
  slot.probe.priv = &slot;
  // MAP before the first access can be logged, as ioremap does.
  slot.id = NextId();
  PushMapRecord(RecordKind::kMap, slot);
  if (udiag_mmio_register_probe(&slot.probe) != 0) {
    udiag_mmio_unregister_region(start);
    PushMapRecord(RecordKind::kUnmap, slot);
    close(fd);
    slot.fd = -1;
    slot.used = false;
    return false;
  }
  return true;
}

void TracedMappings::Detach(Mapping& mapping, bool close_fd) {
  udiag_mmio_unregister_probe(&mapping.probe);
  udiag_mmio_unregister_region(reinterpret_cast<void*>(mapping.probe.addr));
  PushMapRecord(RecordKind::kUnmap, mapping);
  mapping.used = false;
  if (close_fd) {
    close(mapping.fd);
    mapping.fd = -1;
  }
}

void TracedMappings::OnMap(void* addr, size_t len, int flags, int fd, off_t offset) {
  if (!(flags & MAP_SHARED) || len == 0) return;  // a private copy is no device
  std::string path = FdPath(fd);
  std::optional<uint64_t> phys = paths_.PhysOf(path, static_cast<uint64_t>(offset));
  if (!phys) return;
  int own_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own_fd < 0) return;
  std::lock_guard lock(mutex_);
  for (Mapping& slot : mappings_) {
    if (!slot.used && slot.fd < 0) {  // a slot between BeforeRemap and AfterRemap keeps its fd
      Attach(slot, reinterpret_cast<uintptr_t>(addr), len, flags, own_fd, offset, *phys);
      return;
    }
  }
  close(own_fd);  // table full: left untraced
}

void TracedMappings::OnUnmap(void* addr, size_t len) {
  uintptr_t start = reinterpret_cast<uintptr_t>(addr);
  std::lock_guard lock(mutex_);
  for (Mapping& mapping : mappings_) {
    if (mapping.used && start < mapping.probe.addr + mapping.probe.len && mapping.probe.addr < start + len) {
      Detach(mapping, /*close_fd=*/true);
    }
  }
}

int TracedMappings::BeforeRemap(void* old_addr, size_t old_len) {
  uintptr_t start = reinterpret_cast<uintptr_t>(old_addr);
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < kMaxMappings; ++i) {
    Mapping& mapping = mappings_[i];
    if (mapping.used && mapping.probe.addr == start && mapping.probe.len == old_len) {
      Detach(mapping, /*close_fd=*/false);
      return static_cast<int>(i);
    }
  }
  return -1;
}

void TracedMappings::AfterRemap(int token, void* old_addr, size_t old_len, void* new_addr, size_t new_len) {
  if (token < 0) return;
  std::lock_guard lock(mutex_);
  Mapping& slot = mappings_[token];
  bool moved = new_addr != MAP_FAILED;
  Attach(slot, reinterpret_cast<uintptr_t>(moved ? new_addr : old_addr), moved ? new_len : old_len, slot.flags,
         slot.fd, slot.offset, slot.phys);
}

}  // namespace udiag::mmiotrace
