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

struct MatchCase {
  std::string_view text;
  bool match;
};

void ExpectMatches(std::initializer_list<MatchCase> cases, uint32_t cpu = 2, std::string_view comm = "worker") {
  for (const MatchCase& c : cases) EXPECT_EQ(Matches(c.text, cpu, comm), c.match) << c.text;
}

TEST(FilterEvalTest, Numbers) {
  ExpectMatches({
      {"count == 5", true}, {"count != 5", false}, {"count == 0x5", true}, {"count == 05", true},
      {"count > 4 && count >= 5 && count < 6 && count <= 5", true}, {"count & 4", true}, {"count & 2", false},
      {"delta == -3", true}, {"delta < 0", true}, {"delta > -4", true}, {"small == -1 && small < 0", true},
      // Equality compares the value truncated to the field's size, as the kernel.
      {"count == 0x100000005", true}, {"small == 255", true},
  });
}

TEST(FilterEvalTest, CommonFields) {
  ExpectMatches({{"common_pid == 0x12345678", true},
                 {"common_type == 42", true},
                 {"common_flags == 1 && common_preempt_count == 2", true}});
}

TEST(FilterEvalTest, FieldsOfOtherSizesNeverMatch) {
  ExpectMatches({{"blob == 513", false}, {"blob != 513", false}});
}

TEST(FilterEvalTest, Cpu) {
  ExpectMatches({{"CPU == 2", true},
                 {"cpu != 3", true},
                 {"common_cpu >= 2 && common_cpu < 3", true},
                 {"CPU & 2", false}},  // no '&' for cpus in the kernel
                2);
}

TEST(FilterEvalTest, Comm) {
  ExpectMatches({{"COMM == \"worker\"", true}, {"comm != \"bash\"", true}, {"comm ~ \"work*\"", true},
                 {"comm ~ \"*ork*\"", true}, {"comm ~ \"w?rk[a-z]r\"", true},
                 // The kernel's suffix match sees the 16 bytes of the comm, so only a
                 // 15-character name can end with the pattern.
                 {"comm ~ \"*ker\"", false}});
  ExpectMatches({{"comm ~ \"*ker\"", true}}, 0, "fifteen_charker");
}

TEST(FilterEvalTest, StaticString) {
  ExpectMatches({{"name == \"bash\"", true}, {"name == \"bas\"", false}, {"name ~ \"ba*\"", true},
                 {"name ~ \"*as*\"", true}, {"name ~ \"b[a-c]sh\"", true}, {"name ~ \"!zsh\"", true},
                 {"name ~ \"!bash\"", false},
                 {"name == \"ba*\"", false}});  // "==" never globs
}

TEST(FilterEvalTest, DataLocAndRelLocStrings) {
  ExpectMatches({{"path == \"/usr/bin/ls\"", true}, {"path ~ \"*/ls\"", true}, {"path ~ \"/usr*\"", true},
                 {"path ~ \"*bin*\"", true}, {"path ~ \"/usr/*/l?\"", true}, {"path ~ \"*/cat\"", false},
                 {"tag == 'hi'", true}, {"tag != \"ho\"", true}});
}

TEST(FilterEvalTest, PrecedenceAndNegation) {
  ExpectMatches({{"count == 1 || count == 5 && delta == -3", true},
                 {"(count == 1 || count == 5) && delta == 3", false},
                 {"count == 5 || count == 1 && delta == 3", true},
                 {"!count == 1", true},
                 {"!(count == 5 || delta == 1)", false},
                 {"!(count == 1 && delta == -3)", true},
                 {"!!(count == 5)", true},
                 {"count == 5 &&", true}});
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
