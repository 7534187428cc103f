// Typed field values (see field_values.h) and their text and JSON forms.

#include "schema/field_values.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <string.h>

#include <cmath>
#include <cstring>
#include <ctime>
#include <iterator>

#include "schema/eventheader.h"

namespace udiag::schema {
namespace {

constexpr std::string_view kOverflow = "<OVERFLOW>";

TypedValue Invalid(std::string_view why) {
  TypedValue value;
  value.text = why;
  return value;
}

TypedValue FromBytes(std::span<const uint8_t> bytes, bool is_string) {
  TypedValue value;
  if (is_string) {
    std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    value.kind = ValueKind::kString;
    value.text = SanitizeUtf8(text.substr(0, text.find('\0')));
  } else {
    value.kind = ValueKind::kBytes;
    value.bytes.assign(bytes.begin(), bytes.end());
  }
  return value;
}

TypedValue FromInteger(std::span<const uint8_t> bytes, bool is_signed) {
  if (bytes.size() != 1 && bytes.size() != 2 && bytes.size() != 4 && bytes.size() != 8) {
    return Invalid("<INVALID-SIZE>");
  }
  TypedValue value;
  value.kind = is_signed ? ValueKind::kSigned : ValueKind::kUnsigned;
  value.bits = IntegerBits(bytes.data(), bytes.size(), is_signed);
  return value;
}

TypedValue FieldValue(const Field& field, std::span<const uint8_t> record) {
  if (uint64_t{field.offset} + field.size > record.size()) return Invalid(kOverflow);
  std::span<const uint8_t> bytes = record.subspan(field.offset, field.size);
  switch (field.kind) {
    case FieldKind::kInteger:
      return FromInteger(bytes, field.is_signed);
    case FieldKind::kStaticArray:
      return FromBytes(bytes, field.is_string);
    case FieldKind::kDataLoc:
    case FieldKind::kRelLoc: {
      auto data = LocData(field, record);
      if (!data) return Invalid(kOverflow);
      return FromBytes(*data, field.is_string);
    }
    case FieldKind::kStruct:
      break;
  }
  return FromBytes(bytes, false);
}

std::string FloatText(double real) {
  if (std::isnan(real)) return "nan";
  if (std::isinf(real)) return real < 0 ? "-inf" : "inf";
  return fmt::format("{}", real);
}

// ISO 8601 UTC, or the number of seconds when the year does not fit.
std::string TimeText(int64_t seconds) {
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm;
  if (gmtime_r(&t, &tm) == nullptr || tm.tm_year + 1900 < 1 || tm.tm_year + 1900 > 9999) {
    return std::to_string(seconds);
  }
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string ErrnoText(int64_t err) {
  const char* name = err > 0 && err < 4096 ? strerrorname_np(static_cast<int>(err)) : nullptr;
  return name ? fmt::format("{}({})", name, err) : fmt::format("ERRNO({})", err);
}

std::string AddressText(const std::vector<uint8_t>& bytes, int family) {
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(family, bytes.data(), text, sizeof(text)) == nullptr) return HexBytesText(bytes);
  return text;
}

std::string UuidText(const std::vector<uint8_t>& b) {
  return fmt::format(
      "{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-"
      "{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
      b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

// Text of a scalar whose text form is the same in trace lines and JSON
// strings (everything but numbers, bools, strings and containers).
std::string ScalarText(const TypedValue& value) {
  switch (value.kind) {
    case ValueKind::kHex:
      return fmt::format("0x{:x}", value.bits);
    case ValueKind::kTime:
      return TimeText(value.as_signed());
    case ValueKind::kErrno:
      return ErrnoText(value.as_signed());
    case ValueKind::kIpv4:
      return value.bytes.size() == 4 ? AddressText(value.bytes, AF_INET) : HexBytesText(value.bytes);
    case ValueKind::kIpv6:
      return value.bytes.size() == 16 ? AddressText(value.bytes, AF_INET6) : HexBytesText(value.bytes);
    case ValueKind::kUuid:
      return value.bytes.size() == 16 ? UuidText(value.bytes) : HexBytesText(value.bytes);
    case ValueKind::kBytes:
      return HexBytesText(value.bytes);
    case ValueKind::kFloat:
      return FloatText(value.real);
    case ValueKind::kBool:
      return value.bits == 0 ? "false" : value.bits == 1 ? "true" : fmt::format("BOOL({})", value.bits);
    case ValueKind::kSigned:
    case ValueKind::kPid:
      return std::to_string(value.as_signed());
    case ValueKind::kUnsigned:
    case ValueKind::kPort:
      return std::to_string(value.bits);
    case ValueKind::kNull:
      return "null";
    case ValueKind::kString:
    case ValueKind::kInvalid:
      return value.text;
    case ValueKind::kArray:
    case ValueKind::kStruct:
      break;
  }
  return {};
}

// `text` (valid UTF-8) as a double-quoted JSON string.
void AppendJsonString(std::string_view text, std::string* out) {
  out->push_back('"');
  for (char c : text) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\r':
        *out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          fmt::format_to(std::back_inserter(*out), "\\u{:04x}", static_cast<unsigned char>(c));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

void AppendJsonValue(const TypedValue& value, std::string* out);

void AppendJsonObject(const std::vector<TypedValue>& values, std::string* out) {
  out->push_back('{');
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendJsonString(values[i].name, out);
    out->push_back(':');
    AppendJsonValue(values[i], out);
  }
  out->push_back('}');
}

void AppendJsonValue(const TypedValue& value, std::string* out) {
  switch (value.kind) {
    case ValueKind::kSigned:
    case ValueKind::kUnsigned:
    case ValueKind::kPid:
    case ValueKind::kPort:
      *out += ScalarText(value);
      return;
    case ValueKind::kBool:
      *out += value.bits <= 1 ? ScalarText(value) : std::to_string(value.bits);
      return;
    case ValueKind::kFloat:
      if (std::isfinite(value.real)) {
        *out += ScalarText(value);
      } else {
        AppendJsonString(ScalarText(value), out);
      }
      return;
    case ValueKind::kNull:
    case ValueKind::kInvalid:
      *out += "null";
      return;
    case ValueKind::kArray:
      out->push_back('[');
      for (size_t i = 0; i < value.items.size(); ++i) {
        if (i > 0) out->push_back(',');
        AppendJsonValue(value.items[i], out);
      }
      out->push_back(']');
      return;
    case ValueKind::kStruct:
      AppendJsonObject(value.items, out);
      return;
    default:
      AppendJsonString(ScalarText(value), out);
      return;
  }
}

// Length of the valid UTF-8 sequence at the start of `s`, or 0.
size_t Utf8SequenceLength(std::string_view s) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  auto continuation = [&](size_t i) { return i < s.size() && (byte(i) & 0xc0) == 0x80; };
  unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return continuation(1) ? 2 : 0;
  if (lead >= 0xe0 && lead <= 0xef) {
    if (!continuation(1) || !continuation(2)) return 0;
    if (lead == 0xe0 && byte(1) < 0xa0) return 0;   // overlong
    if (lead == 0xed && byte(1) >= 0xa0) return 0;  // surrogate
    return 3;
  }
  if (lead >= 0xf0 && lead <= 0xf4) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if (lead == 0xf0 && byte(1) < 0x90) return 0;   // overlong
    if (lead == 0xf4 && byte(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

std::optional<std::span<const uint8_t>> LocData(const Field& field, std::span<const uint8_t> record) {
  if (field.size != sizeof(uint32_t) || uint64_t{field.offset} + field.size > record.size()) {
    return std::nullopt;
  }
  uint32_t loc;
  std::memcpy(&loc, record.data() + field.offset, sizeof(loc));
  uint64_t start = loc & 0xffffu;
  if (field.kind == FieldKind::kRelLoc) start += field.offset + sizeof(uint32_t);
  uint64_t length = loc >> 16;
  if (start + length > record.size()) return std::nullopt;
  return record.subspan(start, length);
}

DecodedEvent DecodeFields(std::string_view tp_name, const std::vector<Field>& fields,
                          std::span<const uint8_t> record) {
  if (IsEventHeaderEvent(tp_name, fields)) return ToDecodedEvent(DecodeEventHeaderRecord(record), tp_name);
  DecodedEvent event;
  event.name = tp_name;
  for (const Field& field : fields) {
    event.values.push_back(FieldValue(field, record));
    event.values.back().name = field.name;
  }
  return event;
}

std::string HexBytesText(std::span<const uint8_t> bytes) {
  std::string text;
  for (size_t i = 0; i < bytes.size(); ++i) {
    fmt::format_to(std::back_inserter(text), "{}{:02x}", i == 0 ? "" : ",", bytes[i]);
  }
  return text;
}

std::string RenderValueText(const TypedValue& value) {
  switch (value.kind) {
    case ValueKind::kString: {
      std::string text;
      AppendJsonString(value.text, &text);
      return text;
    }
    case ValueKind::kArray: {
      std::string text = "[";
      for (size_t i = 0; i < value.items.size(); ++i) {
        text += (i == 0 ? "" : ",") + RenderValueText(value.items[i]);
      }
      return text + "]";
    }
    case ValueKind::kStruct:
      return value.items.empty() ? "{ }" : "{ " + RenderValuesText(value.items) + " }";
    default:
      return ScalarText(value);
  }
}

std::string RenderValuesText(const std::vector<TypedValue>& values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) {
    fmt::format_to(std::back_inserter(text), "{}{}={}", i == 0 ? "" : " ", values[i].name,
                   RenderValueText(values[i]));
  }
  return text;
}

std::string RenderFieldsJson(const std::vector<TypedValue>& values) {
  std::string out;
  AppendJsonObject(values, &out);
  return out;
}

std::string SanitizeUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  while (!bytes.empty()) {
    size_t n = Utf8SequenceLength(bytes);
    if (n == 0) {
      out += "\xef\xbf\xbd";
      n = 1;
    } else {
      out.append(bytes.substr(0, n));
    }
    bytes.remove_prefix(n);
  }
  return out;
}

}  // namespace udiag::schema
