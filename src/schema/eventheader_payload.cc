// EventHeader metadata and field values (see eventheader_payload.h). The
// encodings and formats are the published values of the convention.

#include "schema/eventheader_payload.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

namespace udiag::schema::eventheader {
namespace {

constexpr uint8_t kEncodingMask = 0x1f;
constexpr uint8_t kEncodingConstArray = 0x20;
constexpr uint8_t kEncodingVarArray = 0x40;
constexpr uint8_t kEncodingChain = 0x80;
constexpr uint8_t kFormatMask = 0x7f;
constexpr uint8_t kFormatChain = 0x80;

enum Encoding : uint8_t {
  kStruct = 1,
  kValue8,
  kValue16,
  kValue32,
  kValue64,
  kValue128,
  kZStringChar8,
  kZStringChar16,
  kZStringChar32,
  kStringLength16Char8,
  kStringLength16Char16,
  kStringLength16Char32,
  kBinaryLength16Char8,
  kEncodingEnd,
};

enum Format : uint8_t {
  kDefault = 0,
  kUnsignedInt,
  kSignedInt,
  kHexInt,
  kErrno,
  kPid,
  kTime,
  kBoolean,
  kFloat,
  kHexBytes,
  kString8,
  kStringUtf,
  kStringUtfBom,
  kStringXml,
  kStringJson,
  kUuid,
  kPort,
  kIpAddress,  // IPv4 for Value32, IPv6 for Value128 (was "ipv4")
  kIpv6,       // older IPv6-only format, Value128
};

// Deeper nesting than any real event; bounds the decoder's recursion.
constexpr int kMaxStructDepth = 32;
// Values one event may decode to. Empty arrays consume no payload, so nested
// arrays of them could otherwise make a tiny event cost billions of steps.
constexpr size_t kMaxValues = 65536;

// "name;attr=value" -> "name".
std::string_view WithoutAttributes(std::string_view name) { return name.substr(0, name.find(';')); }

// Appends code point `cp` as UTF-8 (U+FFFD for surrogates and out-of-range).
void AppendUtf8(uint32_t cp, std::string* out) {
  if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) cp = 0xfffd;
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

std::string Latin1ToUtf8(std::span<const uint8_t> bytes) {
  std::string out;
  for (uint8_t b : bytes) AppendUtf8(b, &out);
  return out;
}

std::string Utf16ToUtf8(std::span<const uint8_t> bytes, bool big_endian) {
  Reader reader(bytes, big_endian);
  std::string out;
  while (reader.remaining() >= 2) {
    uint32_t unit = *reader.U16();
    if (unit >= 0xd800 && unit <= 0xdbff && reader.remaining() >= 2) {
      Reader peek = reader;
      uint32_t low = *peek.U16();
      if (low >= 0xdc00 && low <= 0xdfff) {
        reader = peek;
        unit = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
      }
    }
    AppendUtf8(unit, &out);
  }
  return out;
}

std::string Utf32ToUtf8(std::span<const uint8_t> bytes, bool big_endian) {
  Reader reader(bytes, big_endian);
  std::string out;
  while (auto unit = reader.Take(4)) AppendUtf8(static_cast<uint32_t>(reader.Unsigned(*unit)), &out);
  return out;
}

// Text of `units` of `unit_size` bytes; a BOM (honoured for the *_bom, xml
// and json formats) overrides size and byte order.
std::string UnitsToUtf8(std::span<const uint8_t> units, size_t unit_size, bool big_endian, uint8_t format) {
  auto starts_with = [&](std::initializer_list<uint8_t> bom) {
    return units.size() >= bom.size() && std::equal(bom.begin(), bom.end(), units.begin());
  };
  if (format == kStringUtfBom || format == kStringXml || format == kStringJson) {
    if (starts_with({0xef, 0xbb, 0xbf}))
      return SanitizeUtf8({reinterpret_cast<const char*>(units.data()) + 3, units.size() - 3});
    if (starts_with({0x00, 0x00, 0xfe, 0xff})) return Utf32ToUtf8(units.subspan(4), true);
    if (starts_with({0xff, 0xfe, 0x00, 0x00})) return Utf32ToUtf8(units.subspan(4), false);
    if (starts_with({0xfe, 0xff})) return Utf16ToUtf8(units.subspan(2), true);
    if (starts_with({0xff, 0xfe})) return Utf16ToUtf8(units.subspan(2), false);
  }
  switch (unit_size) {
    case 2:
      return Utf16ToUtf8(units, big_endian);
    case 4:
      return Utf32ToUtf8(units, big_endian);
    default:
      if (format == kString8) return Latin1ToUtf8(units);
      return SanitizeUtf8({reinterpret_cast<const char*>(units.data()), units.size()});
  }
}

TypedValue BytesValue(std::span<const uint8_t> bytes, ValueKind kind = ValueKind::kBytes) {
  TypedValue value;
  value.kind = kind;
  value.bytes.assign(bytes.begin(), bytes.end());
  return value;
}

TypedValue StringValue(std::string text) {
  TypedValue value;
  value.kind = ValueKind::kString;
  value.text = std::move(text);
  return value;
}

TypedValue ScalarValue(ValueKind kind, uint64_t bits) {
  TypedValue value;
  value.kind = kind;
  value.bits = bits;
  return value;
}

uint64_t SignExtend(uint64_t bits, size_t size) {
  if (size >= 8) return bits;
  uint64_t sign = uint64_t{1} << (size * 8 - 1);
  return (bits ^ sign) - sign;
}

// A fixed-size value (1, 2, 4 or 8 bytes) in `format`; formats that do not
// apply to the size fall back to the encoding's default, unsigned.
TypedValue FixedValue(std::span<const uint8_t> bytes, uint8_t format, const Reader& order) {
  size_t size = bytes.size();
  uint64_t bits = order.Unsigned(bytes);
  switch (format) {
    case kSignedInt:
      return ScalarValue(ValueKind::kSigned, SignExtend(bits, size));
    case kHexInt:
      return ScalarValue(ValueKind::kHex, bits);
    case kErrno:
      if (size == 4) return ScalarValue(ValueKind::kErrno, SignExtend(bits, size));
      break;
    case kPid:
      if (size == 4) return ScalarValue(ValueKind::kPid, SignExtend(bits, size));
      break;
    case kTime:
      if (size >= 4) return ScalarValue(ValueKind::kTime, SignExtend(bits, size));
      break;
    case kBoolean:
      if (size <= 4) return ScalarValue(ValueKind::kBool, bits);
      break;
    case kFloat:
      if (size == 4 || size == 8) {
        TypedValue value;
        value.kind = ValueKind::kFloat;
        if (size == 4) {
          float f;
          uint32_t u = static_cast<uint32_t>(bits);
          std::memcpy(&f, &u, sizeof(f));
          value.real = f;
        } else {
          std::memcpy(&value.real, &bits, sizeof(value.real));
        }
        return value;
      }
      break;
    case kHexBytes:
      return BytesValue(bytes);
    case kString8:
      if (size == 1) return StringValue(Latin1ToUtf8(bytes));
      break;
    case kStringUtf:
      if (size <= 4) {
        std::string text;
        AppendUtf8(static_cast<uint32_t>(bits), &text);
        return StringValue(std::move(text));
      }
      break;
    case kPort:
      if (size == 2) return ScalarValue(ValueKind::kPort, (uint64_t{bytes[0]} << 8) | bytes[1]);
      break;
    case kIpAddress:
      if (size == 4) return BytesValue(bytes, ValueKind::kIpv4);
      break;
    default:
      break;
  }
  return ScalarValue(ValueKind::kUnsigned, bits);
}

TypedValue Value128(std::span<const uint8_t> bytes, uint8_t format) {
  switch (format) {
    case kUuid:
      return BytesValue(bytes, ValueKind::kUuid);
    case kIpAddress:
    case kIpv6:
      return BytesValue(bytes, ValueKind::kIpv6);
    default:
      return BytesValue(bytes);
  }
}

bool IsFixedSizeFormat(uint8_t format) {
  return (format >= kUnsignedInt && format <= kFloat) || (format >= kUuid && format <= kIpv6);
}

// Counted char8/binary content with a fixed-size format: a nullable field
// (newer LinuxTracepoints): no bytes is null, a fitting size is decoded in the
// format, anything else stays bytes.
TypedValue NullableValue(std::span<const uint8_t> bytes, uint8_t format, const Reader& order) {
  switch (bytes.size()) {
    case 0: {
      TypedValue value;
      value.kind = ValueKind::kNull;
      return value;
    }
    case 1:
    case 2:
    case 4:
    case 8:
      if (format != kUuid && format != kIpv6) return FixedValue(bytes, format, order);
      break;
    case 16:
      return Value128(bytes, format);
  }
  return BytesValue(bytes);
}

// Text or bytes of a string/binary encoding's content.
TypedValue TextValue(std::span<const uint8_t> units, size_t unit_size, uint8_t encoding, uint8_t format,
                     const Reader& order) {
  bool big_endian = order.big_endian();
  if ((encoding == kStringLength16Char8 || encoding == kBinaryLength16Char8) && IsFixedSizeFormat(format)) {
    return NullableValue(units, format, order);
  }
  bool binary_default = encoding == kBinaryLength16Char8 &&
                        !(format == kString8 || format == kStringUtf || format == kStringUtfBom ||
                          format == kStringXml || format == kStringJson);
  if (format == kHexBytes || binary_default) return BytesValue(units);
  return StringValue(UnitsToUtf8(units, unit_size, big_endian, format));
}

class PayloadDecoder {
 public:
  PayloadDecoder(const std::vector<FieldDef>& defs, Reader* reader, std::string* error)
      : defs_(defs), reader_(*reader), error_(*error) {}

  // Decodes all top-level fields into `out`; false at the first error.
  bool DecodeAll(std::vector<TypedValue>* out) {
    size_t index = 0;
    while (index < defs_.size()) {
      if (!DecodeField(&index, 0, out)) return false;
    }
    return true;
  }

 private:
  // Index just past defs_[index] and, for a struct, all its members.
  std::optional<size_t> End(size_t index, int depth) const {
    if (depth > kMaxStructDepth) return std::nullopt;
    const FieldDef& def = defs_[index];
    size_t next = index + 1;
    if (def.encoding != kStruct) return next;
    for (uint8_t member = 0; member < def.format; ++member) {
      if (next >= defs_.size()) return std::nullopt;
      auto end = End(next, depth + 1);
      if (!end) return std::nullopt;
      next = *end;
    }
    return next;
  }

  bool Fail(std::string why) {
    error_ = std::move(why);
    return false;
  }

  // Decodes defs_[*index] (with its members) and appends it to `out`.
  bool DecodeField(size_t* index, int depth, std::vector<TypedValue>* out) {
    const FieldDef& def = defs_[*index];
    std::string name = SanitizeUtf8(def.name);
    auto end = End(*index, depth);
    if (!end) return Fail(fmt::format("struct \"{}\" is nested too deeply or lacks members", name));
    TypedValue value;
    if (def.const_array || def.var_array) {
      uint16_t count = def.const_count;
      if (def.var_array) {
        auto n = reader_.U16();
        if (!n) return Fail(fmt::format("truncated array length of \"{}\"", name));
        count = *n;
      }
      value.kind = ValueKind::kArray;
      for (uint16_t i = 0; i < count; ++i) {
        TypedValue element;
        if (!DecodeElement(*index, depth, &element)) return false;
        value.items.push_back(std::move(element));
      }
    } else if (!DecodeElement(*index, depth, &value)) {
      return false;
    }
    value.name = std::move(name);
    out->push_back(std::move(value));
    *index = *end;
    return true;
  }

  // One element of defs_[index]: a struct or a scalar.
  bool DecodeElement(size_t index, int depth, TypedValue* out) {
    const FieldDef& def = defs_[index];
    if (++values_ > kMaxValues) return Fail("too many values");
    if (def.encoding == kStruct) {
      out->kind = ValueKind::kStruct;
      size_t member = index + 1;
      for (uint8_t i = 0; i < def.format; ++i) {
        if (!DecodeField(&member, depth + 1, &out->items)) return false;
      }
      return true;
    }
    auto value = DecodeScalar(def);
    if (!value) return Fail(fmt::format("truncated value of \"{}\"", SanitizeUtf8(def.name)));
    *out = std::move(*value);
    return true;
  }

  std::optional<TypedValue> DecodeScalar(const FieldDef& def) {
    static constexpr size_t kFixedSize[] = {0, 0, 1, 2, 4, 8, 16};
    switch (def.encoding) {
      case kValue8:
      case kValue16:
      case kValue32:
      case kValue64: {
        auto bytes = reader_.Take(kFixedSize[def.encoding]);
        if (!bytes) return std::nullopt;
        return FixedValue(*bytes, def.format, reader_);
      }
      case kValue128: {
        auto bytes = reader_.Take(16);
        if (!bytes) return std::nullopt;
        return Value128(*bytes, def.format);
      }
      case kZStringChar8:
      case kZStringChar16:
      case kZStringChar32: {
        size_t unit = size_t{1} << (def.encoding - kZStringChar8);
        auto units = reader_.ZUnits(unit);
        if (!units) return std::nullopt;
        return TextValue(*units, unit, def.encoding, def.format, reader_);
      }
      case kStringLength16Char8:
      case kStringLength16Char16:
      case kStringLength16Char32:
      case kBinaryLength16Char8: {
        size_t unit =
            def.encoding == kBinaryLength16Char8 ? 1 : size_t{1} << (def.encoding - kStringLength16Char8);
        auto count = reader_.U16();
        auto units = count ? reader_.Take(*count * unit) : std::nullopt;
        if (!units) return std::nullopt;
        return TextValue(*units, unit, def.encoding, def.format, reader_);
      }
      default:
        return std::nullopt;  // ParseMetadata admits no other encoding
    }
  }

  const std::vector<FieldDef>& defs_;
  Reader& reader_;
  std::string& error_;
  size_t values_ = 0;
};

}  // namespace

bool ParseMetadata(std::span<const uint8_t> block, bool big_endian, std::string* event_name,
                   std::vector<FieldDef>* defs, std::string* error) {
  Reader reader(block, big_endian);
  auto name = reader.ZString();
  if (!name) {
    *error = "unterminated event name";
    return false;
  }
  *event_name = SanitizeUtf8(WithoutAttributes(*name));
  while (reader.remaining() > 0) {
    FieldDef def;
    auto field_name = reader.ZString();
    auto encoding = field_name ? reader.U8() : std::nullopt;
    if (!encoding) {
      *error = "truncated field definition";
      return false;
    }
    def.name = WithoutAttributes(*field_name);
    def.encoding = *encoding & kEncodingMask;
    def.const_array = (*encoding & kEncodingConstArray) != 0;
    def.var_array = (*encoding & kEncodingVarArray) != 0;
    std::optional<uint8_t> format = uint8_t{0};
    if (*encoding & kEncodingChain) format = reader.U8();
    bool ok = format.has_value();
    if (ok && (*format & kFormatChain)) ok = reader.U16().has_value();  // the field tag
    if (ok && def.const_array) {
      auto count = reader.U16();
      ok = count.has_value();
      def.const_count = count.value_or(0);
    }
    if (!ok) {
      *error = fmt::format("truncated definition of field \"{}\"", SanitizeUtf8(def.name));
      return false;
    }
    def.format = *format & kFormatMask;
    if (def.encoding == 0 || def.encoding >= kEncodingEnd || (def.const_array && def.var_array) ||
        (def.encoding == kStruct && def.format == 0)) {
      *error = fmt::format("field \"{}\" has invalid encoding 0x{:02x}", SanitizeUtf8(def.name), *encoding);
      return false;
    }
    defs->push_back(def);
  }
  return true;
}

bool DecodePayload(const std::vector<FieldDef>& defs, Reader* reader, std::vector<TypedValue>* out,
                   std::string* error) {
  PayloadDecoder decoder(defs, reader, error);
  return decoder.DecodeAll(out);
}

}  // namespace udiag::schema::eventheader
