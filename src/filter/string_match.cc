#include "filter/string_match.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace udiag::filter {

StringMatch ParseGlobPattern(std::string_view pattern, bool* negate) {
  *negate = !pattern.empty() && pattern[0] == '!';
  if (*negate) pattern.remove_prefix(1);
  StringMatch out{MatchKind::kFull, std::string(pattern)};
  // A pattern starting with a digit is an index for function filters: full match.
  if (!pattern.empty() && std::isdigit(static_cast<unsigned char>(pattern[0]))) return out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '*') {
      if (i == 0) {
        out.kind = MatchKind::kEnd;
      } else if (i == pattern.size() - 1) {
        out.kind = out.kind == MatchKind::kEnd ? MatchKind::kMiddle : MatchKind::kFront;
        pattern = pattern.substr(0, i);
        break;
      } else {
        return {MatchKind::kGlob, out.pattern};
      }
    } else if (c == '[' || c == '?' || c == '\\') {
      return {MatchKind::kGlob, out.pattern};
    }
  }
  if (!pattern.empty() && pattern[0] == '*') pattern.remove_prefix(1);
  out.pattern = std::string(pattern);
  return out;
}

namespace {

// The text of `field` up to its first NUL.
std::string_view CString(std::span<const uint8_t> field) {
  const char* p = reinterpret_cast<const char*>(field.data());
  return std::string_view(p, strnlen(p, field.size()));
}

// strncmp(field, pattern, n) == 0 where field has field.size() bytes (zeros past them).
bool PrefixEquals(std::span<const uint8_t> field, std::string_view pattern, size_t n) {
  for (size_t k = 0; k < n; ++k) {
    uint8_t a = k < field.size() ? field[k] : 0;
    uint8_t b = k < pattern.size() ? static_cast<uint8_t>(pattern[k]) : 0;
    if (a != b) return false;
    if (a == 0) return true;
  }
  return true;
}

}  // namespace

bool MatchString(const StringMatch& match, std::span<const uint8_t> field) {
  const std::string_view pat = match.pattern;
  const size_t len = field.size();
  switch (match.kind) {
    case MatchKind::kFull:
      return PrefixEquals(field, pat, len == 0 ? pat.size() + 1 : len);
    case MatchKind::kFront:
      if (len && len < pat.size()) return false;
      return PrefixEquals(field, pat, pat.size());
    case MatchKind::kMiddle: {
      // strnstr(): the first `len` bytes, NULs and all.
      if (pat.empty()) return true;
      auto hay = std::string_view(reinterpret_cast<const char*>(field.data()), len);
      return hay.find(pat) != std::string_view::npos;
    }
    case MatchKind::kEnd:
      // The kernel takes the string to end at len - 1: the NUL of a
      // __data_loc string, but the last byte of a char[N] or comm.
      return len >= 1 && len - 1 >= pat.size() &&
             std::memcmp(field.data() + len - 1 - pat.size(), pat.data(), pat.size()) == 0;
    case MatchKind::kGlob:
      return GlobMatch(pat, CString(field));
  }
  return false;
}

bool GlobMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0;
  size_t star_p = std::string_view::npos, star_t = 0;  // where to retry after the last '*'
  auto pat_at = [&](size_t i) -> unsigned char { return i < pattern.size() ? pattern[i] : 0; };
  for (;;) {
    unsigned char c = t < text.size() ? text[t] : 0;
    unsigned char d = pat_at(p);
    bool literal = false;
    bool matched = true;
    if (d == '?') {
      matched = c != 0;
      ++p;
    } else if (d == '*') {
      if (p + 1 >= pattern.size()) return true;  // a trailing '*' takes the rest
      star_p = ++p;
      star_t = t;
      continue;
    } else if (d == '[') {
      // A class: spans "a" or "a-b", the first may be ']'; "[!" inverts.
      size_t q = p + 1;
      bool inverted = pat_at(q) == '!';
      q += inverted;
      bool in = false;
      unsigned char a = pat_at(q++);
      for (;;) {
        if (a == 0) break;  // malformed: '[' is a literal
        unsigned char b = a;
        if (pat_at(q) == '-' && pat_at(q + 1) != ']') {
          b = pat_at(q + 1);
          if (b == 0) {
            a = 0;
            break;
          }
          q += 2;
        }
        in |= a <= c && c <= b;
        a = pat_at(q++);
        if (a == ']') break;
      }
      if (a == 0) {
        literal = true;
      } else {
        matched = in != inverted;
        p = q;
      }
    } else {
      literal = true;
    }
    if (literal) {
      if (d == '\\') d = pat_at(++p);
      ++p;
      matched = c == d;
      if (matched && d == 0) return true;
    }
    if (matched && c != 0) {
      ++t;
      continue;
    }
    if (matched && c == 0) {
      // '?' and classes never match the end; a literal NUL is handled above.
      matched = false;
    }
    if (c == 0 || star_p == std::string_view::npos) return false;
    p = star_p;
    t = ++star_t;
  }
}

}  // namespace udiag::filter
