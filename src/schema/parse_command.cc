// §4: the registration command parser. It tokenises byte by byte the way the
// kernel does, quirks included, rather than following a real grammar.

#include "schema/event_description.h"

#include <cerrno>
#include <limits>
#include <optional>

#include "schema/ascii_text.h"
#include "schema/type_table.h"

namespace udiag::schema {
namespace {

constexpr uint32_t kMaxArrayLength = 1024;  // the kernel's MAX_FIELD_ARRAY_SIZE

// Types with a space in them: the type is the prefix plus one more token.
// Order matters: "__data_loc unsigned " must win over "__data_loc ".
constexpr std::string_view kMultiWordTypePrefixes[] = {
    "unsigned ",           "struct ",    "__data_loc unsigned ", "__data_loc ",
    "__rel_loc unsigned ", "__rel_loc ",
};

// 0..15 for a hex digit of either case, 16 for anything else.
unsigned DigitValue(char c) {
  c = static_cast<char>(c | 0x20);
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return 16;
}

// kstrtoull(): an optional '+', at least one digit, an optional trailing
// '\n'. Base 0 picks hex for "0x" followed by a hex digit, octal for a
// leading '0' and decimal otherwise.
std::optional<uint64_t> ParseKernelUnsigned(std::string_view text, unsigned base, uint64_t max) {
  if (text.starts_with('+')) text.remove_prefix(1);
  if (base == 0) {
    bool hex =
        text.size() > 2 && text[0] == '0' && (text[1] | 0x20) == 'x' && DigitValue(text[2]) < 16;
    base = hex ? 16 : text.starts_with('0') ? 8 : 10;
    if (hex) text.remove_prefix(2);
  }
  uint64_t value = 0;
  size_t digits = 0;
  for (; digits < text.size(); ++digits) {
    unsigned digit = DigitValue(text[digits]);
    if (digit >= base) break;
    if (value > (max - digit) / base) return std::nullopt;
    value = value * base + digit;
  }
  std::string_view rest = text.substr(digits);
  if (rest.starts_with('\n')) rest.remove_prefix(1);
  if (digits == 0 || !rest.empty()) return std::nullopt;
  return value;
}

// N of "char[N]": the kernel copies the text after '[' into an 8-byte buffer
// (so at most 7 characters), needs a ']' in it and ignores what follows.
std::optional<uint32_t> ArrayLength(std::string_view type) {
  std::string_view inside = type.substr(type.find('[') + 1);
  if (inside.empty() || inside.size() >= 8) return std::nullopt;
  size_t close = inside.find(']');
  if (close == std::string_view::npos) return std::nullopt;
  auto length = ParseKernelUnsigned(inside.substr(0, close), 0, kMaxArrayLength);
  if (!length || *length == 0) return std::nullopt;
  return static_cast<uint32_t>(*length);
}

// Kind, size and stringness of a field declared without a size part.
std::optional<Field> LayoutOfType(std::string_view type) {
  Field field;
  if (const IntegerType* integer = FindIntegerType(type)) {
    field.size = integer->size;
  } else if (type.starts_with("char[") || type.starts_with("unsigned char[")) {
    auto length = ArrayLength(type);
    if (!length) return std::nullopt;
    field.kind = FieldKind::kStaticArray;
    field.size = *length;
    field.is_string = true;
  } else if (type.starts_with("__data_loc ") || type.starts_with("__rel_loc ")) {
    field.kind = type.starts_with("__data_loc ") ? FieldKind::kDataLoc : FieldKind::kRelLoc;
    field.size = sizeof(uint32_t);
    // Quirk kept: a substring test, so "__data_loc mychar" is a string too.
    field.is_string = type.find("char") != std::string_view::npos;
  } else {
    return std::nullopt;
  }
  return field;
}

// A struct field with its size part. The kernel keeps the size in an int and
// fails on negative values.
std::optional<Field> LayoutOfStruct(std::string_view size_text) {
  auto size = ParseKernelUnsigned(size_text, 10, std::numeric_limits<int32_t>::max());
  if (!size || *size == 0) return std::nullopt;
  Field field;
  field.kind = FieldKind::kStruct;
  field.size = static_cast<uint32_t>(*size);
  return field;
}

// strsep() semantics: every separator splits, so neighbours give empty parts.
std::vector<std::string_view> SplitOnEvery(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (size_t at; (at = text.find(separator)) != std::string_view::npos;) {
    parts.push_back(text.substr(0, at));
    text.remove_prefix(at + 1);
  }
  parts.push_back(text);
  return parts;
}

// Removes the type and the space after it from `field`. A field without a
// space after its type has no name part, which is an error.
std::optional<std::string_view> TakeType(std::string_view* field) {
  size_t type_start_length = 0;
  for (std::string_view prefix : kMultiWordTypePrefixes) {
    if (field->starts_with(prefix)) {
      type_start_length = prefix.size();
      break;
    }
  }
  size_t space = field->find(' ', type_start_length);
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view type = field->substr(0, space);
  field->remove_prefix(space + 1);
  return type;
}

// Parses one ';'-separated field text into `field` (offset not set).
// Returns false for a syntax error.
bool ParseField(std::string_view text, Field* field) {
  std::optional<std::string_view> type = TakeType(&text);
  if (!type) return false;
  // The parts left are the name and, for structs only, the size.
  std::vector<std::string_view> parts = SplitOnEvery(text, ' ');
  std::optional<Field> parsed;
  if (parts.size() == 1) {
    parsed = LayoutOfType(*type);
  } else if (parts.size() == 2 && type->starts_with("struct ")) {
    parsed = LayoutOfStruct(parts[1]);
  }
  if (!parsed) return false;
  *field = std::move(*parsed);
  field->type = *type;
  field->name = parts[0];
  field->is_signed = !type->starts_with('u');
  return true;
}

// Fields are laid out back to back after the common header, unaligned.
bool ParseFields(std::string_view args, EventDescription* event) {
  uint64_t offset = kCommonHeaderSize;
  for (std::string_view text : SplitOnEvery(args, ';')) {
    text = TrimLeadingSpace(text);
    if (text.empty()) continue;
    Field field;
    if (!ParseField(text, &field)) return false;
    field.offset = static_cast<uint32_t>(offset);
    offset += field.size;
    if (offset > std::numeric_limits<uint32_t>::max()) return false;
    event->fields.push_back(std::move(field));
  }
  event->min_size = static_cast<uint32_t>(offset - kCommonHeaderSize);
  return true;
}

// ':' would start text flags, which no kernel supports any more. Empty names
// and '/' are rejected on purpose although the kernel accepts them (§4.1).
bool ValidName(std::string_view name) {
  return !name.empty() && name.find_first_of(":/") == std::string_view::npos;
}

}  // namespace

int ParseCommand(std::string_view command, EventDescription* out) {
  size_t space = command.find(' ');
  EventDescription event;
  event.name = command.substr(0, space);
  if (!ValidName(event.name)) return EINVAL;
  if (space != std::string_view::npos && !ParseFields(command.substr(space + 1), &event)) {
    return EINVAL;
  }
  *out = std::move(event);
  return 0;
}

}  // namespace udiag::schema
