// Whitespace handling shared by the event parsers. The kernel uses its own
// isspace() here, so this must not depend on the C library's locale.
#pragma once

#include <string_view>
#include <vector>

namespace udiag::schema {

inline bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

inline std::string_view TrimLeadingSpace(std::string_view text) {
  while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
  return text;
}

inline std::string_view TrimSpace(std::string_view text) {
  text = TrimLeadingSpace(text);
  while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
  return text;
}

// The kernel's argv_split(): tokens separated by runs of whitespace.
inline std::vector<std::string_view> SplitOnWhitespace(std::string_view text) {
  std::vector<std::string_view> tokens;
  for (text = TrimLeadingSpace(text); !text.empty(); text = TrimLeadingSpace(text)) {
    size_t end = 0;
    while (end < text.size() && !IsSpace(text[end])) ++end;
    tokens.push_back(text.substr(0, end));
    text.remove_prefix(end);
  }
  return tokens;
}

}  // namespace udiag::schema
