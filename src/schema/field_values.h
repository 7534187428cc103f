// Typed, named field values of one record, for consumers that want more than
// the kernel's trace text: `udiag report --json`, the Perfetto writer, and the
// EventHeader text rendering.
//
// A plain user event is decoded from its schema::Field list; an EventHeader
// event (eventheader.h) from the self-described metadata in its payload.
// Records are untrusted: decoding never reads outside `record`, and whatever
// cannot be decoded becomes a kInvalid value saying why.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schema/event_description.h"

namespace udiag::schema {

enum class ValueKind {
  kSigned,    // int64 in `bits`
  kUnsigned,  // uint64 in `bits`
  kHex,       // uint64 in `bits`, shown in hex
  kBool,      // `bits`: 0 false, 1 true, other values shown as numbers
  kFloat,     // `real`
  kTime,      // int64 seconds since 1970 in `bits`
  kErrno,     // int64 errno value in `bits`
  kPid,       // int64 in `bits`
  kPort,      // IP port in host order in `bits`
  kIpv4,      // 4 `bytes`, network order
  kIpv6,      // 16 `bytes`, network order
  kUuid,      // 16 `bytes`, RFC 4122 order
  kString,    // `text`, valid UTF-8
  kBytes,     // `bytes`
  kArray,     // `items` (unnamed)
  kStruct,    // `items` (named)
  kNull,      // an EventHeader nullable field without a value
  kInvalid,   // `text` says why (e.g. "<OVERFLOW>")
};

struct TypedValue {
  std::string name;  // empty for array elements
  ValueKind kind = ValueKind::kInvalid;
  uint64_t bits = 0;
  double real = 0;
  std::string text;
  std::vector<uint8_t> bytes;
  std::vector<TypedValue> items;

  int64_t as_signed() const { return static_cast<int64_t>(bits); }
};

struct DecodedEvent {
  // The tracepoint name, or for an EventHeader event its decoded event name.
  std::string name;
  std::vector<TypedValue> values;
  // Attributes that are not fields (EventHeader: id, version, opcode, tag,
  // activity ids — only those that are set). Empty for plain user events.
  std::vector<TypedValue> meta;
};

// The integer in `bytes` (1, 2, 4 or 8 of them, little-endian), signed ones
// sign-extended to 64 bits.
inline uint64_t IntegerBits(const uint8_t* bytes, size_t size, bool is_signed) {
  switch (size) {
    case 1:
      return is_signed ? static_cast<uint64_t>(int64_t{static_cast<int8_t>(bytes[0])}) : bytes[0];
    case 2: {
      uint16_t u;
      std::memcpy(&u, bytes, sizeof(u));
      return is_signed ? static_cast<uint64_t>(int64_t{static_cast<int16_t>(u)}) : u;
    }
    case 4: {
      uint32_t u;
      std::memcpy(&u, bytes, sizeof(u));
      return is_signed ? static_cast<uint64_t>(int64_t{static_cast<int32_t>(u)}) : u;
    }
    default: {
      uint64_t u;
      std::memcpy(&u, bytes, sizeof(u));
      return u;
    }
  }
}

// Decodes every field of `record` (common header + payload) of the tracepoint
// `tp_name` whose format is `fields`.
DecodedEvent DecodeFields(std::string_view tp_name, const std::vector<Field>& fields,
                          std::span<const uint8_t> record);

// The bytes a __data_loc / __rel_loc field refers to, or nullopt when the loc
// word or the bytes lie outside `record`.
std::optional<std::span<const uint8_t>> LocData(const Field& field, std::span<const uint8_t> record);

// One value as the text renderings print it: 5, 0x1f, true, 1.5, "hi", null,
// 2024-01-02T03:04:05Z, ENOENT(2), 10.0.0.1, ::1, 01,ab (bytes),
// [1,2] (arrays), { a=1 b="x" } (structs).
std::string RenderValueText(const TypedValue& value);

// "01,ab,ff": the kernel's way of printing byte arrays.
std::string HexBytesText(std::span<const uint8_t> bytes);

// "name=value name=value ..." with RenderValueText values.
std::string RenderValuesText(const std::vector<TypedValue>& values);

// A JSON object of the values: {"x":5,"msg":"hi","a":[1,2],"s":{"f":true}}.
// Signed/unsigned/pid/port are numbers, bools true/false, floats numbers
// (non-finite ones as strings), kNull and kInvalid null, everything else
// strings.
std::string RenderFieldsJson(const std::vector<TypedValue>& values);

// `bytes` as valid UTF-8: invalid sequences become U+FFFD.
std::string SanitizeUtf8(std::string_view bytes);

}  // namespace udiag::schema
