// Bounds-checked little-endian reads from a byte span: every decode of a
// file we did not just write goes through one, so bad input fails a read
// instead of running past the buffer.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>

namespace udiag::record::ctf {

class ByteCursor {
 public:
  explicit ByteCursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  size_t remaining() const { return bytes_.size() - pos_; }

  template <typename T>
    requires std::is_trivially_copyable_v<T>
  bool Read(T* value) {
    if (remaining() < sizeof(T)) return false;
    std::memcpy(value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }

  bool ReadBytes(size_t count, std::span<const uint8_t>* out) {
    if (remaining() < count) return false;
    *out = bytes_.subspan(pos_, count);
    pos_ += count;
    return true;
  }

  // A NUL-terminated string; `out` excludes the NUL.
  bool ReadCString(std::string_view* out) {
    if (remaining() == 0) return false;
    const uint8_t* start = bytes_.data() + pos_;
    const void* nul = std::memchr(start, 0, remaining());
    if (nul == nullptr) return false;
    size_t length = static_cast<const uint8_t*>(nul) - start;
    *out = std::string_view(reinterpret_cast<const char*>(start), length);
    pos_ += length + 1;
    return true;
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

// Appends the bytes of `value` (host order, which is little endian here).
template <typename T, typename Buffer>
  requires std::is_trivially_copyable_v<T>
void AppendValue(Buffer* out, T value) {
  // resize + memcpy rather than insert(): GCC 12 at -O3 warns falsely on the latter.
  size_t at = out->size();
  out->resize(at + sizeof(T));
  std::memcpy(out->data() + at, &value, sizeof(T));
}

}  // namespace udiag::record::ctf
