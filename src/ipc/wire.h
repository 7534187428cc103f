// Little binary encoding for control messages: fixed-width integers in host
// order (both ends share one machine) and length-prefixed byte strings. The
// decoder is bounds-checked because the daemon decodes untrusted peers.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace udiag::ipc {

class Encoder {
 public:
  template <typename T>
    requires std::is_integral_v<T> || std::is_enum_v<T>
  Encoder& Put(T value) {
    size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &value, sizeof(T));
    return *this;
  }
  Encoder& PutBytes(std::string_view s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

class Decoder {
 public:
  explicit Decoder(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  template <typename T>
    requires std::is_integral_v<T> || std::is_enum_v<T>
  T Get() {
    T value{};
    if (!Need(sizeof(T))) return value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string GetBytes() {
    uint32_t n = Get<uint32_t>();
    if (!Need(n)) return {};
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  std::span<const uint8_t> Rest() const { return bytes_.subspan(failed_ ? bytes_.size() : pos_); }
  // True when every read so far was within the message.
  bool ok() const { return !failed_; }

 private:
  bool Need(size_t n) {
    if (failed_ || bytes_.size() - pos_ < n) failed_ = true;
    return !failed_;
  }
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  bool failed_ = false;
};

}  // namespace udiag::ipc
