#include "filter/string_match.h"

#include <gtest/gtest.h>

#include <tuple>

namespace udiag::filter {
namespace {

struct PatternCase {
  std::string_view pattern;
  MatchKind kind;
  std::string_view search;
  bool negate;
};

TEST(StringMatchTest, PatternKinds) {
  const PatternCase cases[] = {
      {"abc", MatchKind::kFull, "abc", false},     {"abc*", MatchKind::kFront, "abc", false},
      {"*abc", MatchKind::kEnd, "abc", false},     {"*abc*", MatchKind::kMiddle, "abc", false},
      {"a*c", MatchKind::kGlob, "a*c", false},     {"*a?c", MatchKind::kGlob, "*a?c", false},
      {"!ab*", MatchKind::kFront, "ab", true},     {"1*", MatchKind::kFull, "1*", false},  // digits: an index
  };
  for (const PatternCase& c : cases) {
    bool negate;
    StringMatch m = ParseGlobPattern(c.pattern, &negate);
    EXPECT_EQ(m.kind, c.kind) << c.pattern;
    EXPECT_EQ(m.pattern, c.search) << c.pattern;
    EXPECT_EQ(negate, c.negate) << c.pattern;
  }
}

TEST(StringMatchTest, Glob) {
  const std::tuple<std::string_view, std::string_view, bool> cases[] = {
      {"a*c", "abbbc", true},  {"a*c", "ac", true},     {"a*c", "abd", false},    {"a?c", "abc", true},
      {"a?c", "ac", false},    {"[a-c]x", "bx", true},  {"[!a-c]x", "bx", false}, {"[!a-c]x", "dx", true},
      {"[]]", "]", true},      {"[a-]", "-", true},     {"a\\*", "a*", true},    {"a\\*", "ab", false},
      {"[abc", "[abc", true},  // malformed class: literal '['
      {"*b*b*", "abcbd", true}, {"?", "", false},       {"*", "", true},
  };
  for (const auto& [pattern, text, match] : cases) EXPECT_EQ(GlobMatch(pattern, text), match) << pattern << " " << text;
}

std::span<const uint8_t> Bytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

TEST(StringMatchTest, LengthsAsTheKernelSeesThem) {
  // __data_loc strings carry their NUL; "==" compares up to it.
  EXPECT_TRUE(MatchString({MatchKind::kFull, "ab"}, Bytes(std::string_view("ab\0", 3))));
  EXPECT_FALSE(MatchString({MatchKind::kFull, "ab"}, Bytes(std::string_view("abc\0", 4))));
  // A char[N] without a NUL equals a pattern of N or more characters that starts with it.
  EXPECT_TRUE(MatchString({MatchKind::kFull, "abcd"}, Bytes("abc")));
  EXPECT_TRUE(MatchString({MatchKind::kEnd, "c"}, Bytes(std::string_view("abc\0", 4))));
  EXPECT_FALSE(MatchString({MatchKind::kEnd, "c"}, Bytes(std::string_view("abc\0\0", 5))));
  // The substring search looks past a NUL, as strnstr() does.
  EXPECT_TRUE(MatchString({MatchKind::kMiddle, "x"}, Bytes(std::string_view("a\0x", 3))));
  EXPECT_FALSE(MatchString({MatchKind::kFront, "abc"}, Bytes("ab")));
}

}  // namespace
}  // namespace udiag::filter
