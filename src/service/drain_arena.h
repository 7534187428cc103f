// Private memory holding the records of one drain round until they are
// delivered. It grows in large steps and keeps its memory across rounds, and
// never initialises what it hands out: every byte is written before use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace udiag::service {

class DrainArena {
 public:
  // `bytes` uninitialised bytes at the end. Growing moves the contents, so
  // keep offsets, not pointers, across calls.
  uint8_t* Extend(size_t bytes) {
    if (capacity_ - size_ < bytes) Grow(size_ + bytes);
    uint8_t* at = bytes_.get() + size_;
    size_ += bytes;
    return at;
  }
  // Forgets the bytes from `size` on (size <= size()).
  void Truncate(size_t size) { size_ = size; }
  void Clear() { size_ = 0; }

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  const uint8_t* data() const { return bytes_.get(); }

 private:
  void Grow(size_t needed);

  std::unique_ptr<uint8_t[]> bytes_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace udiag::service
