// A minimal protocol-buffer encoder: enough wire format (varint, fixed64,
// length-delimited) to write Perfetto traces without a protobuf library.
// Messages are built bottom-up: encode a child, then append it to its parent.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace udiag::record::perfetto {

// The wire format's pieces, for encoders that size a message before they
// write it (IntegerEventPlan).
constexpr uint32_t kWireVarint = 0;
constexpr uint32_t kWireLength = 2;
constexpr size_t VarintSize(uint64_t value) {
  // 7 bits a byte, at least one byte.
  return (static_cast<size_t>(std::bit_width(value | 1)) + 6) / 7;
}
constexpr uint64_t KeyOf(uint32_t field, uint32_t wire_type) { return uint64_t{field} << 3 | wire_type; }
// Writes `value` at `at`; returns the end.
inline char* PutVarint(char* at, uint64_t value) {
  while (value >= 0x80) {
    *at++ = static_cast<char>(0x80 | (value & 0x7f));
    value >>= 7;
  }
  *at++ = static_cast<char>(value);
  return at;
}

class ProtoMessage {
 public:
  // Wire type 0. int64 fields take the two's complement (10 bytes when < 0).
  void Varint(uint32_t field, uint64_t value);
  void Int64(uint32_t field, int64_t value) { Varint(field, static_cast<uint64_t>(value)); }
  void Bool(uint32_t field, bool value) { Varint(field, value ? 1 : 0); }
  // Wire type 1.
  void Fixed64(uint32_t field, uint64_t value);
  void Double(uint32_t field, double value);
  // Wire type 2.
  void Bytes(uint32_t field, std::string_view bytes);
  void Message(uint32_t field, const ProtoMessage& child) { Bytes(field, child.bytes_); }

  const std::string& bytes() const { return bytes_; }
  bool empty() const { return bytes_.empty(); }

 private:
  void Key(uint32_t field, uint32_t wire_type) { RawVarint(KeyOf(field, wire_type)); }
  void RawVarint(uint64_t value);

  std::string bytes_;
};

}  // namespace udiag::record::perfetto
