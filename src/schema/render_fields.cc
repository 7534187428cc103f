// §13.4: the generic field printer the trace file uses for user events, and
// the decoded form of EventHeader events (eventheader.h). The record comes from
// an untrusted producer, so every read is bounds-checked.

#include "schema/event_description.h"

#include <fmt/format.h>

#include <cstring>
#include <iterator>

#include "schema/eventheader.h"
#include "schema/field_values.h"

namespace udiag::schema {
namespace {

constexpr std::string_view kOverflow = "<OVERFLOW>";
constexpr std::string_view kInvalidSize = "<INVALID-SIZE>";

template <typename T>
T Load(std::span<const uint8_t> bytes) {
  T value;
  std::memcpy(&value, bytes.data(), sizeof(value));
  return value;
}

// Bytes up to the first NUL, as the kernel's "%.*s" prints them.
std::string_view CString(std::span<const uint8_t> bytes) {
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return text.substr(0, text.find('\0'));
}

std::string IntegerValue(std::span<const uint8_t> bytes) {
  switch (bytes.size()) {
    case 1: {
      uint8_t c = bytes[0];
      bool printable = c >= 0x20 && c < 0x7f;
      return printable ? fmt::format("'{}'({})", static_cast<char>(c), c) : fmt::format("({})", c);
    }
    case 2:
      return fmt::format("0x{:x} ({})", Load<uint16_t>(bytes), Load<uint16_t>(bytes));
    case 4:
      return fmt::format("0x{:x} ({})", Load<uint32_t>(bytes), Load<int32_t>(bytes));
    case 8:
      return fmt::format("0x{:x} ({})", Load<uint64_t>(bytes), Load<int64_t>(bytes));
    default:
      return std::string(kInvalidSize);
  }
}

// The bytes a __data_loc / __rel_loc word refers to: a string for char types,
// hex bytes otherwise.
std::string LocValue(const Field& field, std::span<const uint8_t> record) {
  if (field.size != sizeof(uint32_t)) return std::string(kInvalidSize);
  auto data = LocData(field, record);
  if (!data) return std::string(kOverflow);
  return field.is_string ? std::string(CString(*data)) : HexBytesText(*data);
}

std::string FieldValue(const Field& field, std::span<const uint8_t> record) {
  if (uint64_t{field.offset} + field.size > record.size()) return std::string(kOverflow);
  std::span<const uint8_t> bytes = record.subspan(field.offset, field.size);
  switch (field.kind) {
    case FieldKind::kStaticArray:
      return std::string(CString(bytes));
    case FieldKind::kDataLoc:
    case FieldKind::kRelLoc:
      return LocValue(field, record);
    case FieldKind::kInteger:
    case FieldKind::kStruct:
      break;
  }
  return IntegerValue(bytes);
}

}  // namespace

std::string RenderFields(const std::vector<Field>& fields, std::span<const uint8_t> record) {
  if (fields.empty()) return "No fields found";
  std::string text;
  for (size_t i = 0; i < fields.size(); ++i) {
    fmt::format_to(std::back_inserter(text), "{}{}={}", i == 0 ? "" : " ", fields[i].name,
                   FieldValue(fields[i], record));
  }
  return text;
}

std::string RenderTraceBody(std::string_view tp_name, const std::vector<Field>& fields,
                            std::span<const uint8_t> record) {
  // EventHeader events describe themselves; their six registered fields are
  // only the header, so print the decoded event instead (eventheader.h).
  if (IsEventHeaderEvent(tp_name, fields)) {
    return fmt::format("{}: {}", tp_name, RenderEventHeaderText(DecodeEventHeaderRecord(record)));
  }
  return fmt::format("{}:{}{}", tp_name, fields.empty() ? "" : " ", RenderFields(fields, record));
}

}  // namespace udiag::schema
