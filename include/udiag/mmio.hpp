// mmio.hpp - RAII memory-access probes over the C API in mmio.h.
//
//   std::atomic<uint64_t> writes{0};
//   udiag::mmio_probe probe(bar + 0x40, 4, [&](const udiag_mmio_access& a) {
//     if (a.dir & UDIAG_MMIO_WRITE) writes.fetch_add(1, std::memory_order_relaxed);
//   });
//   if (probe.error() != 0) ...   // errno value of udiag_mmio_register_probe
//
// The probe is registered by the constructor and unregistered by the
// destructor (after which no handler runs). The handlers are called in signal
// context on the accessing thread: they must be async-signal-safe (no
// allocation, no locks, no stdio; lock-free atomics are fine), exactly like
// the C handlers. Functors are stored in the probe object, which must not move.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "udiag/mmio.h"

namespace udiag {

// The "no handler" functor: a probe without it registers a NULL handler.
struct mmio_no_handler {
  template <typename... Args>
  void operator()(Args&&...) const {}
};

// Post: void(const udiag_mmio_access&); Pre: void(const udiag_mmio_access&, void* ucontext).
template <typename Post, typename Pre = mmio_no_handler>
class mmio_probe {
 public:
  mmio_probe(const volatile void* addr, size_t len, Post post, Pre pre = Pre())
      : post_(std::move(post)), pre_(std::move(pre)) {
    probe_.addr = reinterpret_cast<uintptr_t>(addr);
    probe_.len = len;
    probe_.priv = this;
    if constexpr (!std::is_same_v<Pre, mmio_no_handler>) probe_.pre = &call_pre;
    if constexpr (!std::is_same_v<Post, mmio_no_handler>) probe_.post = &call_post;
    error_ = -udiag_mmio_register_probe(&probe_);
  }
  mmio_probe(const mmio_probe&) = delete;
  mmio_probe& operator=(const mmio_probe&) = delete;
  ~mmio_probe() {
    if (error_ == 0) udiag_mmio_unregister_probe(&probe_);
  }

  // 0, or the errno registration failed with (EEXIST, EINVAL, ENOTSUP).
  int error() const { return error_; }
  const udiag_mmio_probe& c_probe() const { return probe_; }

 private:
  static void call_pre(udiag_mmio_probe* probe, const udiag_mmio_access* access, void* ucontext) {
    static_cast<mmio_probe*>(probe->priv)->pre_(*access, ucontext);
  }
  static void call_post(udiag_mmio_probe* probe, const udiag_mmio_access* access) {
    static_cast<mmio_probe*>(probe->priv)->post_(*access);
  }

  udiag_mmio_probe probe_{};
  Post post_;
  Pre pre_;
  int error_ = 0;
};

template <typename Post>
mmio_probe(const volatile void*, size_t, Post) -> mmio_probe<Post>;
template <typename Post, typename Pre>
mmio_probe(const volatile void*, size_t, Post, Pre) -> mmio_probe<Post, Pre>;

}  // namespace udiag
