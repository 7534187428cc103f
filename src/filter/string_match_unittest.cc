#include "filter/string_match.h"

#include <gtest/gtest.h>

namespace udiag::filter {
namespace {

StringMatch Parse(std::string_view pattern, bool* negate) { return ParseGlobPattern(pattern, negate); }

TEST(StringMatchTest, PatternKinds) {
  bool negate;
  auto m = Parse("abc", &negate);
  EXPECT_EQ(m.kind, MatchKind::kFull);
  EXPECT_FALSE(negate);
  m = Parse("abc*", &negate);
  EXPECT_EQ(m.kind, MatchKind::kFront);
  EXPECT_EQ(m.pattern, "abc");
  m = Parse("*abc", &negate);
  EXPECT_EQ(m.kind, MatchKind::kEnd);
  EXPECT_EQ(m.pattern, "abc");
  m = Parse("*abc*", &negate);
  EXPECT_EQ(m.kind, MatchKind::kMiddle);
  EXPECT_EQ(m.pattern, "abc");
  m = Parse("a*c", &negate);
  EXPECT_EQ(m.kind, MatchKind::kGlob);
  EXPECT_EQ(m.pattern, "a*c");
  m = Parse("*a?c", &negate);
  EXPECT_EQ(m.kind, MatchKind::kGlob);
  EXPECT_EQ(m.pattern, "*a?c");
  m = Parse("!ab*", &negate);
  EXPECT_TRUE(negate);
  EXPECT_EQ(m.kind, MatchKind::kFront);
  EXPECT_EQ(m.pattern, "ab");
  m = Parse("1*", &negate);  // digits: an index, matched whole
  EXPECT_EQ(m.kind, MatchKind::kFull);
  EXPECT_EQ(m.pattern, "1*");
}

TEST(StringMatchTest, Glob) {
  EXPECT_TRUE(GlobMatch("a*c", "abbbc"));
  EXPECT_TRUE(GlobMatch("a*c", "ac"));
  EXPECT_FALSE(GlobMatch("a*c", "abd"));
  EXPECT_TRUE(GlobMatch("a?c", "abc"));
  EXPECT_FALSE(GlobMatch("a?c", "ac"));
  EXPECT_TRUE(GlobMatch("[a-c]x", "bx"));
  EXPECT_FALSE(GlobMatch("[!a-c]x", "bx"));
  EXPECT_TRUE(GlobMatch("[!a-c]x", "dx"));
  EXPECT_TRUE(GlobMatch("[]]", "]"));
  EXPECT_TRUE(GlobMatch("[a-]", "-"));
  EXPECT_TRUE(GlobMatch("a\\*", "a*"));
  EXPECT_FALSE(GlobMatch("a\\*", "ab"));
  EXPECT_TRUE(GlobMatch("[abc", "[abc"));  // malformed class: literal '['
  EXPECT_TRUE(GlobMatch("*b*b*", "abcbd"));
  EXPECT_FALSE(GlobMatch("?", ""));
  EXPECT_TRUE(GlobMatch("*", ""));
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
