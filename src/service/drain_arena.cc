#include "service/drain_arena.h"

#include <algorithm>
#include <cstring>

namespace udiag::service {
namespace {
// A round usually holds a few MiB: start big enough for most, then double.
constexpr size_t kMinCapacity = 1 << 20;
}  // namespace

void DrainArena::Grow(size_t needed) {
  const size_t capacity = std::max({needed, 2 * capacity_, kMinCapacity});
  auto bytes = std::make_unique_for_overwrite<uint8_t[]>(capacity);
  if (size_ > 0) std::memcpy(bytes.get(), bytes_.get(), size_);
  bytes_ = std::move(bytes);
  capacity_ = capacity;
}

}  // namespace udiag::service
