// Test helpers: a shared memfd mapping (which has an alias view) and a
// recorder of the accesses probe handlers see.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "udiag/mmio.h"

namespace udiag::mmio::testing {

inline constexpr size_t kPage = 4096;

// `pages` pages of a memfd, mapped MAP_SHARED read-write; the fd stays open.
class SharedPages {
 public:
  explicit SharedPages(size_t pages) : len_(pages * kPage) {
    fd_ = memfd_create("udiag-mmio-test", MFD_CLOEXEC);
    if (fd_ < 0 || ftruncate(fd_, static_cast<off_t>(len_)) != 0) return;
    void* p = mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    base_ = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
  }
  SharedPages(const SharedPages&) = delete;
  SharedPages& operator=(const SharedPages&) = delete;
  ~SharedPages() {
    if (base_ != nullptr) munmap(base_, len_);
    if (fd_ >= 0) close(fd_);
  }
  uint8_t* base() const { return base_; }
  uint8_t* page(size_t i) const { return base_ + i * kPage; }
  int fd() const { return fd_; }
  size_t len() const { return len_; }

 private:
  size_t len_;
  int fd_ = -1;
  uint8_t* base_ = nullptr;
};

// Keeps the first kCapacity post-handler accesses and counts all calls.
struct Recorder {
  static constexpr size_t kCapacity = 256;
  std::atomic<size_t> pre_calls{0};
  std::atomic<size_t> post_calls{0};
  udiag_mmio_access posts[kCapacity];
  udiag_mmio_probe* post_probes[kCapacity];

  static void Pre(udiag_mmio_probe* probe, const udiag_mmio_access*, void*) {
    static_cast<Recorder*>(probe->priv)->pre_calls.fetch_add(1);
  }
  static void Post(udiag_mmio_probe* probe, const udiag_mmio_access* access) {
    auto* self = static_cast<Recorder*>(probe->priv);
    size_t i = self->post_calls.fetch_add(1);
    if (i < kCapacity) {
      self->posts[i] = *access;
      self->post_probes[i] = probe;
    }
  }
  udiag_mmio_probe MakeProbe(const void* addr, size_t len) {
    udiag_mmio_probe probe{};
    probe.addr = reinterpret_cast<uintptr_t>(addr);
    probe.len = len;
    probe.pre = Pre;
    probe.post = Post;
    probe.priv = this;
    return probe;
  }
};

}  // namespace udiag::mmio::testing
