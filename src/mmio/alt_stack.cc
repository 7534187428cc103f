#include "mmio/alt_stack.h"

#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>

namespace udiag::mmio {
namespace {

// Decode + Execute keep about 2 KiB of decoder state on the stack, the
// handlers of the caller get the rest.
constexpr size_t kHandlerNeeds = 64 * 1024;

class OwnedAltStack {
 public:
  ~OwnedAltStack() {
    if (base_ == nullptr) return;
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, nullptr);
    munmap(base_, size_);
  }

  int Install() {
    stack_t current{};
    if (sigaltstack(nullptr, &current) != 0) return -errno;
    if (!(current.ss_flags & SS_DISABLE)) return 0;
    size_t minimum = std::max<size_t>(getauxval(AT_MINSIGSTKSZ), MINSIGSTKSZ);
    size_t size = (minimum + kHandlerNeeds + 4095) & ~size_t{4095};
    void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (base == MAP_FAILED) return -errno;
    stack_t stack{};
    stack.ss_sp = base;
    stack.ss_size = size;
    if (sigaltstack(&stack, nullptr) != 0) {
      int err = errno;
      munmap(base, size);
      return -err;
    }
    base_ = base;
    size_ = size;
    return 0;
  }

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

int EnsureAltStack() {
  thread_local OwnedAltStack stack;
  return stack.Install();
}

}  // namespace udiag::mmio
