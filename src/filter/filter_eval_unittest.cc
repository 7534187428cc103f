// Matching semantics: numbers by size and sign, strings by match kind, the
// generic fields, precedence and negation.
#include <gtest/gtest.h>

#include "filter/filter.h"
#include "schema/test_record.h"

namespace udiag::filter {
namespace {

using schema::testing::FieldsOf;
using schema::testing::LocWord;
using schema::testing::Record;

constexpr std::string_view kArgs = "u32 count; int delta; char[8] name; __data_loc char[] path; __rel_loc char[] tag; s8 small; struct blob blob 3";

// count=5 delta=-3 name="bash" path="/usr/bin/ls" tag="hi" small=-1 blob=01 02 00.
// The common header's pid is 0x12345678, its type 0x2a.
Record Sample() {
  Record r;
  r.Add<uint32_t>(5).Add<int32_t>(-3).AddBytes({'b', 'a', 's', 'h', 0, 0, 0, 0});
  // payload starts at 8: count 8, delta 12, name 16, path 24, tag 28, small 32, blob 33; data at 36.
  r.Add<uint32_t>(LocWord(36, 12)).Add<uint32_t>(LocWord(36 + 12 - 32, 3)).Add<int8_t>(-1).AddBytes({1, 2, 0});
  r.AddString("/usr/bin/ls").AddString("hi");
  return r;
}

bool Matches(std::string_view text, uint32_t cpu = 2, std::string_view comm = "worker") {
  Filter filter;
  ParseError error;
  int err = Compile(text, FieldsOf(kArgs), &filter, &error);
  EXPECT_EQ(err, 0) << text << "\n" << ErrorFileText(text, error);
  Record record = Sample();
  return filter.Matches({record.span(), cpu, comm});
}

TEST(FilterEvalTest, Numbers) {
  EXPECT_TRUE(Matches("count == 5"));
  EXPECT_FALSE(Matches("count != 5"));
  EXPECT_TRUE(Matches("count == 0x5"));
  EXPECT_TRUE(Matches("count == 05"));
  EXPECT_TRUE(Matches("count > 4 && count >= 5 && count < 6 && count <= 5"));
  EXPECT_TRUE(Matches("count & 4"));
  EXPECT_FALSE(Matches("count & 2"));
  EXPECT_TRUE(Matches("delta == -3"));
  EXPECT_TRUE(Matches("delta < 0"));
  EXPECT_TRUE(Matches("delta > -4"));
  EXPECT_TRUE(Matches("small == -1 && small < 0"));
  // Equality compares the value truncated to the field's size, as the kernel.
  EXPECT_TRUE(Matches("count == 0x100000005"));
  EXPECT_TRUE(Matches("small == 255"));
}

TEST(FilterEvalTest, CommonFields) {
  EXPECT_TRUE(Matches("common_pid == 0x12345678"));
  EXPECT_TRUE(Matches("common_type == 42"));
  EXPECT_TRUE(Matches("common_flags == 1 && common_preempt_count == 2"));
}

TEST(FilterEvalTest, FieldsOfOtherSizesNeverMatch) {
  EXPECT_FALSE(Matches("blob == 513"));
  EXPECT_FALSE(Matches("blob != 513"));
}

TEST(FilterEvalTest, Cpu) {
  EXPECT_TRUE(Matches("CPU == 2", 2));
  EXPECT_TRUE(Matches("cpu != 3", 2));
  EXPECT_TRUE(Matches("common_cpu >= 2 && common_cpu < 3", 2));
  EXPECT_FALSE(Matches("CPU & 2", 2));  // no '&' for cpus in the kernel
}

TEST(FilterEvalTest, Comm) {
  EXPECT_TRUE(Matches("COMM == \"worker\""));
  EXPECT_TRUE(Matches("comm != \"bash\""));
  EXPECT_TRUE(Matches("comm ~ \"work*\""));
  EXPECT_TRUE(Matches("comm ~ \"*ork*\""));
  EXPECT_TRUE(Matches("comm ~ \"w?rk[a-z]r\""));
  // The kernel's suffix match sees the 16 bytes of the comm, so only a
  // 15-character name can end with the pattern.
  EXPECT_FALSE(Matches("comm ~ \"*ker\""));
  EXPECT_TRUE(Matches("comm ~ \"*ker\"", 0, "fifteen_charker"));
}

TEST(FilterEvalTest, StaticString) {
  EXPECT_TRUE(Matches("name == \"bash\""));
  EXPECT_FALSE(Matches("name == \"bas\""));
  EXPECT_TRUE(Matches("name ~ \"ba*\""));
  EXPECT_TRUE(Matches("name ~ \"*as*\""));
  EXPECT_TRUE(Matches("name ~ \"b[a-c]sh\""));
  EXPECT_TRUE(Matches("name ~ \"!zsh\""));
  EXPECT_FALSE(Matches("name ~ \"!bash\""));
}

TEST(FilterEvalTest, DataLocAndRelLocStrings) {
  EXPECT_TRUE(Matches("path == \"/usr/bin/ls\""));
  EXPECT_TRUE(Matches("path ~ \"*/ls\""));
  EXPECT_TRUE(Matches("path ~ \"/usr*\""));
  EXPECT_TRUE(Matches("path ~ \"*bin*\""));
  EXPECT_TRUE(Matches("path ~ \"/usr/*/l?\""));
  EXPECT_FALSE(Matches("path ~ \"*/cat\""));
  EXPECT_TRUE(Matches("tag == 'hi'"));
  EXPECT_TRUE(Matches("tag != \"ho\""));
}

// "==" never globs; a pattern starting with a digit is matched whole.
TEST(FilterEvalTest, GlobCharactersAreLiteralForEquality) {
  EXPECT_FALSE(Matches("name == \"ba*\""));
}

TEST(FilterEvalTest, PrecedenceAndNegation) {
  EXPECT_TRUE(Matches("count == 1 || count == 5 && delta == -3"));
  EXPECT_FALSE(Matches("(count == 1 || count == 5) && delta == 3"));
  EXPECT_TRUE(Matches("count == 5 || count == 1 && delta == 3"));
  EXPECT_TRUE(Matches("!count == 1"));
  EXPECT_FALSE(Matches("!(count == 5 || delta == 1)"));
  EXPECT_TRUE(Matches("!(count == 1 && delta == -3)"));
  EXPECT_TRUE(Matches("!!(count == 5)"));
  EXPECT_TRUE(Matches("count == 5 &&"));
}

TEST(FilterEvalTest, OutOfRangeLocNeverMatches) {
  Filter filter;
  ParseError error;
  ASSERT_EQ(Compile("path ~ \"*\"", FieldsOf(kArgs), &filter, &error), 0);
  Record record;
  record.Add<uint32_t>(5).Add<int32_t>(-3).AddBytes({0, 0, 0, 0, 0, 0, 0, 0});
  record.Add<uint32_t>(LocWord(200, 10)).Add<uint32_t>(0).Add<int8_t>(0).AddBytes({0, 0, 0});
  EXPECT_FALSE(filter.Matches({record.span(), 0, ""}));
  // A record shorter than the fields (the daemon never passes one) matches nothing.
  ASSERT_EQ(Compile("count == 5", FieldsOf(kArgs), &filter, &error), 0);
  EXPECT_FALSE(filter.Matches({record.span().first(9), 0, ""}));
}

TEST(FilterEvalTest, EmptyFilterMatchesEverything) {
  Filter filter;
  EXPECT_TRUE(filter.Matches({{}, 0, ""}));
  EXPECT_FALSE(filter.needs_comm());
}

TEST(FilterEvalTest, NeedsCommOnlyWithComm) {
  Filter filter;
  ParseError error;
  ASSERT_EQ(Compile("count == 5", FieldsOf(kArgs), &filter, &error), 0);
  EXPECT_FALSE(filter.needs_comm());
  ASSERT_EQ(Compile("count == 5 || COMM == \"x\"", FieldsOf(kArgs), &filter, &error), 0);
  EXPECT_TRUE(filter.needs_comm());
}

}  // namespace
}  // namespace udiag::filter
