#include "schema/event_description.h"

#include <gtest/gtest.h>

namespace udiag::schema {
namespace {

std::vector<Field> FieldsOf(std::string_view args) {
  EventDescription event;
  EXPECT_EQ(ParseCommand("__test_event " + std::string(args), &event), 0) << args;
  return event.fields;
}

// What the kernel decides when `registered` exists and `incoming` is registered
// again under the same name (§20.2 check_match).
bool Matches(std::string_view registered, std::string_view incoming) {
  return FieldsMatch(FieldsOf(registered), incoming);
}

TEST(FieldsMatchTest, DynTestMatching) {
  EXPECT_TRUE(Matches("u32 a", "u32 a"));
  EXPECT_TRUE(Matches("u32 a; u32 b", "u32 a; u32 b"));
  EXPECT_TRUE(Matches("u32 a; u32 b", "u32 a; u32 b;"));
  EXPECT_TRUE(Matches("struct my_struct a 20", "struct my_struct a 20"));
}

TEST(FieldsMatchTest, DynTestNotMatching) {
  EXPECT_FALSE(Matches("u32 a", "u32 b"));
  EXPECT_FALSE(Matches("u32 a; u32 b", "u32 b; u32 a"));
  EXPECT_FALSE(Matches("u64 a; u64 b", "u32 a; u32 b"));
  EXPECT_FALSE(Matches("struct my_struct a 20", "struct my_struct b 20"));
  EXPECT_FALSE(Matches("struct my_struct a 20", "struct my_struct a 21"));
  EXPECT_FALSE(Matches("struct my_struct a 20", "struct other a 20"));
}

TEST(FieldsMatchTest, FtraceTestRegisterEvents) {
  EXPECT_TRUE(Matches("u32 field1; u32 field2", "u32 field1; u32 field2"));
  EXPECT_TRUE(Matches("u32 field1; u32 field2", "u32 field1;u32 field2"));
  EXPECT_FALSE(Matches("u32 field1; u32 field2", "u32 field1;"));
}

TEST(FieldsMatchTest, SemicolonWithoutSpaceMatchesItself) {
  EXPECT_TRUE(Matches("u32 a;u32 b", "u32 a;u32 b"));
  EXPECT_TRUE(Matches("u32 a;u32 b;", "u32 a; u32 b"));
}

TEST(FieldsMatchTest, DoubleSemicolonNeverMatchesItself) {
  EXPECT_FALSE(Matches("u32 a;;u32 b", "u32 a;;u32 b"));
  EXPECT_TRUE(Matches("u32 a;;u32 b", "u32 a; u32 b"));
}

TEST(FieldsMatchTest, WhitespaceAmountIsIrrelevant) {
  EXPECT_TRUE(Matches("unsigned int a; char[20] b", "  unsigned \t int  a;\n char[20]  b  "));
}

TEST(FieldsMatchTest, SpaceBeforeSemicolonBreaksTheGroup) {
  // "u32 a" then ";" alone: the first group has no ';' of its own.
  EXPECT_FALSE(Matches("u32 a; u32 b", "u32 a ; u32 b"));
}

TEST(FieldsMatchTest, TypeSpellingMatters) {
  EXPECT_FALSE(Matches("char[20] a", "char[0x14] a"));
  EXPECT_TRUE(Matches("char[0x14] a", "char[0x14] a"));
}

TEST(FieldsMatchTest, NoTokensMatchOnlyAnEventWithoutFields) {
  EXPECT_TRUE(FieldsMatch({}, ""));
  EXPECT_TRUE(FieldsMatch({}, " \t\n"));
  EXPECT_FALSE(Matches("u32 a", ""));
  EXPECT_FALSE(FieldsMatch({}, "u32 a"));
  // A lone ';' is a token too.
  EXPECT_FALSE(FieldsMatch({}, ";"));
}

TEST(FieldsMatchTest, AllTokensMustBeUsed) {
  EXPECT_FALSE(Matches("u32 a", "u32 a; u32 b"));
  EXPECT_FALSE(Matches("u32 a; u32 b", "u32 a;"));
  EXPECT_FALSE(Matches("u32 a", "u32 a extra"));
}

TEST(FieldsMatchTest, LocFields) {
  EXPECT_TRUE(Matches("char[20] msg; __rel_loc char[] data", "char[20] msg;__rel_loc char[] data"));
  EXPECT_FALSE(Matches("__rel_loc char[] data", "__data_loc char[] data"));
}

}  // namespace
}  // namespace udiag::schema
