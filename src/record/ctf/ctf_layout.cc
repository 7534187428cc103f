// Field kinds and the names TSDL shows for user events. Event and field
// names may hold any byte but space and ':' (and fields may repeat), while
// TSDL wants unique identifiers and printable strings, so names are mapped.

#include "record/ctf/ctf_layout.h"

#include <algorithm>
#include <set>

namespace udiag::record::ctf {
namespace {

// TSDL keywords: an identifier spelled like one does not parse.
constexpr std::string_view kKeywords[] = {
    "align",  "callsite", "const",    "char",      "clock",   "double", "enum",
    "env",    "event",    "floating_point", "float", "integer", "int",  "long",
    "short",  "signed",   "stream",   "string",    "struct",  "trace",  "typealias",
    "typedef", "unsigned", "variant", "void",      "_Bool",   "_Complex", "_Imaginary",
};

bool IsKeyword(std::string_view word) {
  return std::find(std::begin(kKeywords), std::end(kKeywords), word) != std::end(kKeywords);
}

bool IsIdentifierChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Hands out identifiers that stay distinct as readers show them: babeltrace
// drops one leading '_', so "_count" and "count" would collide.
class IdentifierAllocator {
 public:
  std::string Allocate(std::string_view wanted) {
    std::string base;
    for (char c : wanted) base += IsIdentifierChar(c) ? c : '_';
    base.erase(0, base.find_first_not_of('_'));
    if (base.empty() || (base[0] >= '0' && base[0] <= '9')) base = "f" + base;
    std::string shown = base;
    for (int n = 2; !used_.insert(shown).second; ++n) shown = base + "_" + std::to_string(n);
    // A keyword parses once prefixed with '_', and readers show it unprefixed.
    return IsKeyword(shown) ? "_" + shown : shown;
  }

 private:
  std::set<std::string> used_;
};

}  // namespace

std::string PrintableText(std::string_view text) {
  std::string printable;
  for (char c : text) printable += (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? c : '_';
  return printable;
}

CtfFieldKind KindOf(const schema::Field& field) {
  switch (field.kind) {
    case schema::FieldKind::kInteger:
      return field.size == 1 || field.size == 2 || field.size == 4 || field.size == 8
                 ? CtfFieldKind::kInteger
                 : CtfFieldKind::kByteArray;
    case schema::FieldKind::kStaticArray:
      return field.is_string ? CtfFieldKind::kCharArray : CtfFieldKind::kByteArray;
    case schema::FieldKind::kDataLoc:
    case schema::FieldKind::kRelLoc:
      return field.is_string ? CtfFieldKind::kDynString : CtfFieldKind::kDynByteArray;
    case schema::FieldKind::kStruct:
      return CtfFieldKind::kByteArray;
  }
  return CtfFieldKind::kByteArray;
}

std::vector<CtfEventLayout> LayoutEvents(const std::vector<EventType>& types) {
  std::vector<CtfEventLayout> layouts;
  std::set<std::string> event_names;
  for (const EventType& type : types) {
    CtfEventLayout layout;
    std::string base = PrintableText(type.system) + ":" + PrintableText(type.name);
    layout.name = base;
    for (int n = 2; !event_names.insert(layout.name).second; ++n) {
      layout.name = base + "#" + std::to_string(n);
    }
    IdentifierAllocator identifiers;
    for (const schema::Field& field : type.fields) {
      CtfField ctf{KindOf(field), identifiers.Allocate(field.name), {}};
      if (ctf.kind == CtfFieldKind::kDynByteArray) {
        ctf.length_name = identifiers.Allocate(field.name + "_length");
      }
      layout.fields.push_back(std::move(ctf));
    }
    layouts.push_back(std::move(layout));
  }
  return layouts;
}

}  // namespace udiag::record::ctf
