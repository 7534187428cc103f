// The texts derived from an event description: dynamic_events lines (§11.3),
// print fmt (§13.3) and the format file (§13.2).

#include "schema/event_description.h"

#include <fmt/format.h>

#include <iterator>

#include "schema/type_table.h"

namespace udiag::schema {
namespace {

// The fields every record starts with (§9.4), as the format file lists them.
constexpr std::string_view kCommonFieldLines =
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n";

// The conversion for the field's value in the quoted part of print fmt.
std::string_view PrintConversion(const Field& field) {
  if (const IntegerType* integer = FindIntegerType(field.type)) return integer->print_format;
  if (field.type.find("char[") != std::string::npos) return "%s";
  return "%llu";  // structs and non-char loc types: the kernel treats them as 64-bit
}

// The expression print fmt passes for the field's value: loc strings go
// through a getter, everything else is read from the record.
std::string PrintArgument(const Field& field) {
  bool is_loc = field.kind == FieldKind::kDataLoc || field.kind == FieldKind::kRelLoc;
  if (!is_loc || !field.is_string) return "REC->" + field.name;
  return fmt::format("{}({})", field.kind == FieldKind::kDataLoc ? "__get_str" : "__get_rel_str",
                     field.name);
}

// f_show(): "type name", except that a '[' outside __data_loc types moves the
// brackets behind the name. The kernel prints an uninitialised length there;
// the static array size (or nothing) is what it would print if it were set.
std::string Declaration(const Field& field) {
  size_t bracket = field.type.find('[');
  if (bracket == std::string::npos || field.kind == FieldKind::kDataLoc) {
    return field.type + " " + field.name;
  }
  std::string_view element = std::string_view(field.type).substr(0, bracket);
  if (field.kind == FieldKind::kStaticArray) {
    return fmt::format("{} {}[{}]", element, field.name, field.size);
  }
  return fmt::format("{} {}[]", element, field.name);
}

}  // namespace

std::string CanonicalField(const Field& field) {
  if (field.kind == FieldKind::kStruct) {
    return fmt::format("{} {} {}", field.type, field.name, field.size);
  }
  return field.type + " " + field.name;
}

std::string DynamicEventsLine(const EventDescription& event) {
  std::string line = "u:" + event.name;
  for (size_t i = 0; i < event.fields.size(); ++i) {
    line += i == 0 ? " " : "; ";
    line += CanonicalField(event.fields[i]);
  }
  return line;
}

std::string PrintFmt(const std::vector<Field>& fields) {
  std::string text = "\"";
  for (size_t i = 0; i < fields.size(); ++i) {
    fmt::format_to(std::back_inserter(text), "{}{}={}", i == 0 ? "" : " ", fields[i].name,
                   PrintConversion(fields[i]));
  }
  text += '"';
  for (const Field& field : fields) text += ", " + PrintArgument(field);
  return text;
}

std::string FormatFile(std::string_view tp_name, uint32_t id, const std::vector<Field>& fields,
                       std::string_view print_fmt) {
  std::string text = fmt::format("name: {}\nID: {}\nformat:\n{}\n", tp_name, id, kCommonFieldLines);
  for (const Field& field : fields) {
    fmt::format_to(std::back_inserter(text), "\tfield:{};\toffset:{};\tsize:{};\tsigned:{};\n",
                   Declaration(field), field.offset, field.size, field.is_signed ? 1 : 0);
  }
  fmt::format_to(std::back_inserter(text), "\nprint fmt: {}\n",
                 print_fmt.empty() ? PrintFmt(fields) : print_fmt);
  return text;
}

}  // namespace udiag::schema
