#include "producer/legacy_status_page.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

namespace udiag::producer::legacy {
namespace {

constexpr uint32_t kFirstSlot = 64;
constexpr uint32_t kEndSlot = kStatusPageSize / 8;

// Raw system calls: the preload interposes mmap/munmap, and these views must
// not go through it.
void* RawMmap(void* addr, size_t len, int prot, int flags, int fd) {
  return reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, 0));
}

int NewPageFd() {
  int fd = static_cast<int>(syscall(SYS_memfd_create, "udiag-status-page", MFD_CLOEXEC));
  if (fd < 0) return -1;
  if (ftruncate(fd, kStatusPageSize) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::mutex g_create_mu;
std::atomic<StatusPage*> g_page{nullptr};

}  // namespace

StatusPage* StatusPage::IfCreated() { return g_page.load(std::memory_order_acquire); }

StatusPage* StatusPage::Get() {
  if (StatusPage* page = IfCreated()) return page;
  std::lock_guard lock(g_create_mu);
  if (StatusPage* page = IfCreated()) return page;
  int fd = NewPageFd();
  if (fd < 0) return nullptr;
  void* base = RawMmap(nullptr, kStatusPageSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd);
  void* scratch = RawMmap(nullptr, kStatusPageSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
  if (base == MAP_FAILED || scratch == MAP_FAILED) {
    int err = errno;
    close(fd);
    errno = err;
    return nullptr;
  }
  auto* page = new StatusPage(fd, reinterpret_cast<uint64_t>(base), reinterpret_cast<uint64_t>(scratch));
  g_page.store(page, std::memory_order_release);
  return page;
}

base::ErrorOr<uint32_t> StatusPage::Acquire(uint32_t event_id, bool* first) {
  std::lock_guard lock(mu_);
  for (auto& [number, slot] : slots_) {
    if (slot.first == event_id) {
      ++slot.second;
      *first = false;
      return number;
    }
  }
  for (uint32_t k = kFirstSlot; k < kEndSlot; ++k) {
    uint32_t number = k * 8;
    if (!slots_.contains(number)) {
      slots_[number] = {event_id, 1};
      *first = true;
      return number;
    }
  }
  return base::Errno{EMFILE};
}

bool StatusPage::Release(uint32_t number) {
  std::lock_guard lock(mu_);
  auto it = slots_.find(number);
  if (it == slots_.end() || --it->second.second > 0) return false;
  slots_.erase(it);
  return true;
}

int StatusPage::AcquireScratch(uint64_t* addr, uint8_t* bit) {
  std::lock_guard lock(mu_);
  auto free = std::find(scratch_used_.begin(), scratch_used_.end(), false);
  if (free == scratch_used_.end()) return EMFILE;
  *free = true;
  size_t index = free - scratch_used_.begin();
  *addr = scratch_ + index / 32 * 4;
  *bit = index % 32;
  return 0;
}

void StatusPage::ReleaseScratch(uint64_t addr, uint8_t bit) {
  std::lock_guard lock(mu_);
  scratch_used_[(addr - scratch_) / 4 * 32 + bit] = false;
}

void* StatusPage::MapReadOnly(void* addr, int flags) {
  void* view = RawMmap(addr, kStatusPageSize, PROT_READ, MAP_SHARED | (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)),
                       fd_);
  if (view == MAP_FAILED) return view;
  std::lock_guard lock(mu_);
  read_only_views_.push_back(reinterpret_cast<uint64_t>(view));
  return view;
}

void StatusPage::ForgetViews(uint64_t addr, size_t len) {
  std::lock_guard lock(mu_);
  std::erase_if(read_only_views_, [&](uint64_t view) { return view >= addr && view - addr < len; });
}

void StatusPage::ForkChild() {
  mu_.unlock();
  int fd = NewPageFd();
  if (fd < 0) return;  // keep sharing the parent's page rather than lose it
  void* copy = RawMmap(nullptr, kStatusPageSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd);
  if (copy == MAP_FAILED) {
    close(fd);
    return;
  }
  memcpy(copy, reinterpret_cast<void*>(base_), kStatusPageSize);
  syscall(SYS_munmap, copy, kStatusPageSize);
  RawMmap(reinterpret_cast<void*>(base_), kStatusPageSize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd);
  for (uint64_t view : read_only_views_) {
    RawMmap(reinterpret_cast<void*>(view), kStatusPageSize, PROT_READ, MAP_SHARED | MAP_FIXED, fd);
  }
  close(fd_);
  fd_ = fd;
}

}  // namespace udiag::producer::legacy
