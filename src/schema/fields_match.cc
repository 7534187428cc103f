// §7 "Field comparison": how the kernel decides that a command's argument
// text describes the fields of an existing event.

#include "schema/event_description.h"

#include "schema/ascii_text.h"

namespace udiag::schema {
namespace {

// v6.9 fix: "u32 a;u32 b" is read as "u32 a; u32 b" so that it can match.
std::string SpaceAfterSemicolons(std::string_view args) {
  std::string spaced;
  for (size_t i = 0; i < args.size(); ++i) {
    spaced += args[i];
    if (args[i] == ';' && (i + 1 == args.size() || !IsSpace(args[i + 1]))) spaced += ' ';
  }
  return spaced;
}

// Joins tokens from `*next` up to and including the first one with a ';'
// (or to the end) with single spaces, advancing `*next` past them.
std::string TakeFieldText(const std::vector<std::string_view>& tokens, size_t* next,
                          bool* has_semicolon) {
  std::string text;
  *has_semicolon = false;
  for (size_t first = *next; *next < tokens.size() && !*has_semicolon; ++*next) {
    if (*next != first) text += ' ';
    text += tokens[*next];
    *has_semicolon = tokens[*next].find(';') != std::string_view::npos;
  }
  return text;
}

}  // namespace

bool FieldsMatch(const std::vector<Field>& fields, std::string_view args) {
  std::string spaced = SpaceAfterSemicolons(args);
  std::vector<std::string_view> tokens = SplitOnWhitespace(spaced);
  if (tokens.empty()) return fields.empty();
  size_t next = 0;
  for (const Field& field : fields) {
    if (next == tokens.size()) return false;
    bool has_semicolon;
    std::string incoming = TakeFieldText(tokens, &next, &has_semicolon);
    if (incoming != CanonicalField(field) + (has_semicolon ? ";" : "")) return false;
  }
  return next == tokens.size();
}

}  // namespace udiag::schema
