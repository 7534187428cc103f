// The payload side of an EventHeader event (see eventheader.h): the metadata
// block (event name and field definitions) and the field values it
// describes. Internal to the EventHeader decoder; all reads are bounds-checked.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schema/field_values.h"

namespace udiag::schema::eventheader {

// Bounds-checked reads in the event's byte order.
class Reader {
 public:
  Reader(std::span<const uint8_t> bytes, bool big_endian) : bytes_(bytes), big_endian_(big_endian) {}

  size_t remaining() const { return bytes_.size() - pos_; }

  std::optional<std::span<const uint8_t>> Take(size_t n) {
    if (n > remaining()) return std::nullopt;
    auto out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }

  std::optional<uint16_t> U16() {
    auto bytes = Take(2);
    if (!bytes) return std::nullopt;
    return static_cast<uint16_t>(Unsigned(*bytes));
  }

  std::optional<uint8_t> U8() {
    auto bytes = Take(1);
    if (!bytes) return std::nullopt;
    return (*bytes)[0];
  }

  // A NUL-terminated string; the NUL is consumed, not returned.
  std::optional<std::string_view> ZString() {
    const uint8_t* start = bytes_.data() + pos_;
    const void* nul = std::memchr(start, 0, remaining());
    if (nul == nullptr) return std::nullopt;
    size_t length = static_cast<const uint8_t*>(nul) - start;
    pos_ += length + 1;
    return std::string_view(reinterpret_cast<const char*>(start), length);
  }

  // Bytes up to a zero unit of `unit` bytes; the terminator is consumed.
  std::optional<std::span<const uint8_t>> ZUnits(size_t unit) {
    for (size_t at = pos_; at + unit <= bytes_.size(); at += unit) {
      bool zero = true;
      for (size_t i = 0; i < unit; ++i) zero = zero && bytes_[at + i] == 0;
      if (zero) {
        auto out = bytes_.subspan(pos_, at - pos_);
        pos_ = at + unit;
        return out;
      }
    }
    return std::nullopt;
  }

  uint64_t Unsigned(std::span<const uint8_t> bytes) const {
    uint64_t value = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
      size_t index = big_endian_ ? i : bytes.size() - 1 - i;
      value = (value << 8) | bytes[index];
    }
    return value;
  }

  bool big_endian() const { return big_endian_; }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  bool big_endian_;
};

// One field definition of the metadata block.
struct FieldDef {
  std::string_view name;
  uint8_t encoding = 0;  // without flags
  uint8_t format = 0;    // without the chain flag; the member count for structs
  bool const_array = false;
  bool var_array = false;
  uint16_t const_count = 0;
};

// Parses a metadata extension block: the event name (attributes after ';'
// removed) and the field definitions. False with *error when malformed.
bool ParseMetadata(std::span<const uint8_t> block, bool big_endian, std::string* event_name,
                   std::vector<FieldDef>* defs, std::string* error);

// Decodes the values `defs` describe from `reader` and appends them to `out`.
// False with *error at the first problem; the values decoded before it stay.
bool DecodePayload(const std::vector<FieldDef>& defs, Reader* reader, std::vector<TypedValue>* out,
                   std::string* error);

}  // namespace udiag::schema::eventheader
