#include "record/tracedat/format_parser.h"

#include <cerrno>
#include <charconv>

namespace udiag::record::tracedat {
namespace {

bool ParseUnsigned(std::string_view text, uint32_t* out) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return error == std::errc() && end == text.data() + text.size();
}

// The value of "key:value;" inside a field line, or nullopt-like empty view.
bool FindAttribute(std::string_view line, std::string_view key, std::string_view* value) {
  size_t start = line.find(key);
  if (start == std::string_view::npos) return false;
  start += key.size();
  size_t end = line.find(';', start);
  if (end == std::string_view::npos) return false;
  *value = line.substr(start, end - start);
  return true;
}

// Splits a declaration into type and name (see ParseFormatText).
bool SplitDeclaration(std::string_view decl, schema::Field* field) {
  std::string_view suffix;
  if (!decl.starts_with("__data_loc ") && decl.ends_with(']')) {
    size_t bracket = decl.rfind('[');
    if (bracket == std::string_view::npos) return false;
    suffix = decl.substr(bracket);
    decl = decl.substr(0, bracket);
  }
  size_t space = decl.rfind(' ');
  if (space == std::string_view::npos || space == 0 || space + 1 == decl.size()) return false;
  field->type = std::string(decl.substr(0, space)) + std::string(suffix);
  field->name = std::string(decl.substr(space + 1));
  std::string_view type = field->type;
  if (type.starts_with("__data_loc ")) {
    field->kind = schema::FieldKind::kDataLoc;
  } else if (type.starts_with("__rel_loc ")) {
    field->kind = schema::FieldKind::kRelLoc;
  } else if (type.starts_with("struct ")) {
    field->kind = schema::FieldKind::kStruct;
  } else if (!suffix.empty()) {
    field->kind = schema::FieldKind::kStaticArray;
  } else {
    field->kind = schema::FieldKind::kInteger;
  }
  field->is_string = field->kind != schema::FieldKind::kInteger &&
                     field->kind != schema::FieldKind::kStruct &&
                     type.find("char") != std::string_view::npos;
  return true;
}

bool ParseFieldLine(std::string_view line, schema::Field* field) {
  std::string_view decl, offset, size, is_signed;
  if (!FindAttribute(line, "field:", &decl) || !FindAttribute(line, "offset:", &offset) ||
      !FindAttribute(line, "size:", &size) || !FindAttribute(line, "signed:", &is_signed)) {
    return false;
  }
  uint32_t signed_value = 0;
  if (!ParseUnsigned(offset, &field->offset) || !ParseUnsigned(size, &field->size) ||
      !ParseUnsigned(is_signed, &signed_value) || signed_value > 1) {
    return false;
  }
  field->is_signed = signed_value == 1;
  return SplitDeclaration(decl, field);
}

}  // namespace

int ParseFormatText(std::string_view text, EventType* out) {
  bool have_name = false, have_id = false;
  out->fields.clear();
  while (!text.empty()) {
    size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    if (line.starts_with("name: ")) {
      out->name = std::string(line.substr(6));
      have_name = !out->name.empty();
    } else if (line.starts_with("ID: ")) {
      have_id = ParseUnsigned(line.substr(4), &out->id);
    } else if (line.starts_with("\tfield:")) {
      schema::Field field;
      if (!ParseFieldLine(line, &field)) return EINVAL;
      if (!field.name.starts_with("common_")) out->fields.push_back(std::move(field));
    }
  }
  return have_name && have_id ? 0 : EINVAL;
}

}  // namespace udiag::record::tracedat
