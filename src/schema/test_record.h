// Test helpers for code that reads records: parsed fields and a record
// builder (common header, then payload bytes in order).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schema/event_description.h"

namespace udiag::schema::testing {

// The fields of "test <args>".
inline std::vector<Field> FieldsOf(std::string_view args) {
  EventDescription event;
  EXPECT_EQ(ParseCommand("test " + std::string(args), &event), 0) << args;
  return event.fields;
}

// A record: a common header with arbitrary contents, then the payload.
class Record {
 public:
  Record() : bytes_{0x2a, 0x00, 0x01, 0x02, 0x78, 0x56, 0x34, 0x12} {}

  template <typename T>
  Record& Add(T value) {
    size_t at = bytes_.size();
    bytes_.resize(at + sizeof(value));
    std::memcpy(bytes_.data() + at, &value, sizeof(value));
    return *this;
  }
  // Adds the bytes of `text` including its terminating NUL.
  Record& AddString(const char* text) {
    bytes_.insert(bytes_.end(), text, text + std::strlen(text) + 1);
    return *this;
  }
  Record& AddBytes(std::vector<uint8_t> bytes) {
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
    return *this;
  }
  std::span<const uint8_t> span() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// A __data_loc / __rel_loc word.
inline uint32_t LocWord(uint32_t offset, uint32_t size) { return size << 16 | offset; }

}  // namespace udiag::schema::testing
