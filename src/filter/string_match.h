// String predicates as the kernel matches them: "==" and "!=" compare the
// whole string; "~" turns the pattern into a prefix, suffix, substring or
// full glob (* ? [..] \) match, and a leading '!' inverts it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace udiag::filter {

enum class MatchKind : uint8_t { kFull, kFront, kMiddle, kEnd, kGlob };

struct StringMatch {
  MatchKind kind = MatchKind::kFull;
  std::string pattern;  // without the '*' a front/middle/end kind implies
};

// The kernel's filter_parse_regex() for "~": the kind and search text of
// `pattern`, and whether a leading '!' inverts the match.
StringMatch ParseGlobPattern(std::string_view pattern, bool* negate);

// Whether `field` matches. `field` is what the record holds: a char[N]'s N
// bytes, a __data_loc string's bytes (NUL included) or the 16 bytes of a
// comm; as in the kernel, matching looks at that length, not at a NUL, except
// for globs.
bool MatchString(const StringMatch& match, std::span<const uint8_t> field);

// lib/glob.c's glob_match(): * ? [a-z] [!x] and \ escapes, on the text up to
// its first NUL.
bool GlobMatch(std::string_view pattern, std::string_view text);

}  // namespace udiag::filter
