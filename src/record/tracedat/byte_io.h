// Little-endian byte building and bounds-checked byte reading for the
// trace.dat writer and reader (host order: see tracedat_layout.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace udiag::record::tracedat {

// Appends fixed-size integers and strings to a growing byte string.
class ByteAppender {
 public:
  template <typename T>
  void Put(T value) {
    out_.append(reinterpret_cast<const char*>(&value), sizeof(value));
  }
  void PutBytes(std::string_view bytes) { out_.append(bytes); }
  void PutCString(std::string_view text) {
    out_.append(text);
    out_.push_back('\0');
  }
  const std::string& bytes() const { return out_; }
  size_t size() const { return out_.size(); }

 private:
  std::string out_;
};

// Reads from a byte span; a read that would pass the end returns nullopt
// and consumes nothing.
class ByteCursor {
 public:
  explicit ByteCursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  template <typename T>
  std::optional<T> Get() {
    std::optional<std::string_view> raw = GetBytes(sizeof(T));
    if (!raw) return std::nullopt;
    T value;
    std::memcpy(&value, raw->data(), sizeof(T));
    return value;
  }
  std::optional<std::string_view> GetBytes(uint64_t count) {
    if (count > bytes_.size() - pos_) return std::nullopt;
    std::string_view view(reinterpret_cast<const char*>(bytes_.data()) + pos_, count);
    pos_ += count;
    return view;
  }
  // A NUL-terminated string (the NUL is consumed, not returned).
  std::optional<std::string_view> GetCString() {
    if (pos_ >= bytes_.size()) return std::nullopt;
    const void* nul = std::memchr(bytes_.data() + pos_, 0, bytes_.size() - pos_);
    if (nul == nullptr) return std::nullopt;
    uint64_t length = static_cast<const uint8_t*>(nul) - (bytes_.data() + pos_);
    std::optional<std::string_view> text = GetBytes(length);
    pos_ += 1;
    return text;
  }
  uint64_t position() const { return pos_; }
  bool Seek(uint64_t position) {
    if (position > bytes_.size()) return false;
    pos_ = position;
    return true;
  }

 private:
  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
};

}  // namespace udiag::record::tracedat
