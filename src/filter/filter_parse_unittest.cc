// The grammar and every class of malformed expression, with the errno, the
// message and the caret position the kernel gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>

#include "filter/filter.h"
#include "schema/test_record.h"

namespace udiag::filter {
namespace {

using schema::testing::FieldsOf;

const std::vector<schema::Field>& Fields() {
  static const auto* fields = new std::vector<schema::Field>(
      FieldsOf("u32 count; int delta; char[16] name; __data_loc char[] path; __rel_loc char[] tag; "
               "u64 addr; s8 small; struct blob blob 20; int sig"));
  return *fields;
}

struct Result {
  int err;
  std::string text;  // what `filter` shows after the write
};

Result Try(std::string_view text) {
  Filter filter;
  ParseError error;
  int err = Compile(text, Fields(), &filter, &error);
  return {err, err ? ErrorFileText(text, error) : std::string(text)};
}

// The file text for an error at `pos`.
std::string At(std::string_view text, size_t pos, std::string_view message) {
  return std::string(text) + "\n" + std::string(pos, ' ') + "^\nparse_error: " + std::string(message) + "\n";
}

void ExpectError(std::string_view text, int err, size_t pos, std::string_view message) {
  Result r = Try(text);
  EXPECT_EQ(r.err, err) << text;
  EXPECT_EQ(r.text, At(text, std::min(pos, text.size()), message)) << text;
}

TEST(FilterParseTest, AcceptsTheGrammar) {
  for (std::string_view ok : {
           "count == 1", "count==1", "count != 0x10", "delta < -5", "delta <= 7", "count > 010", "count >= 3",
           "count & 4", "name == \"abc\"", "name != 'abc'", "name ~ \"a*\"", "path ~ \"*x*\"", "tag == \"t\"",
           "COMM == \"bash\"", "comm ~ \"b?sh\"", "CPU == 0", "cpu != 1", "common_cpu < 4", "common_pid == 1",
           "common_type == 42", "common_flags == 0", "common_preempt_count == 0", "count == 1 && delta == 2",
           "count == 1 || delta == 2 && sig == 3", "!(count == 1)", "!count == 1", "!!count == 1",
           "((count == 1) || (delta == 2)) && !(sig == 3 || small < 0)", "  count == 1", "addr == 0xffffffffffffffff",
           "delta == -9223372036854775808", "path.ustring ~ \"*\"", "blob == 1",
       }) {
    Result r = Try(ok);
    EXPECT_EQ(r.err, 0) << ok << "\n" << r.text;
  }
}

// A trailing "&&" or "||" is ignored by the kernel's parser.
TEST(FilterParseTest, TrailingOperatorIsIgnored) {
  EXPECT_EQ(Try("count == 1 &&").err, 0);
  EXPECT_EQ(Try("count == 1 || !").err, 0);
}

TEST(FilterParseTest, EventsRstExampleWithAnUnknownField) {
  // events.rst §5.2; the kernel's caret now points past the bad field name.
  ExpectError("((sig >= 10 && sig < 15) || dsig == 17) && comm != bash", EINVAL, 33, "Field not found");
}

TEST(FilterParseTest, UnquotedStringsAreRejected) {
  // The same example without the typo still fails: current kernels want quotes.
  ExpectError("((sig >= 10 && sig < 15) || sig == 17) && comm != bash", EINVAL, 51,
              "Invalid value (did you forget quotes)?");
  EXPECT_EQ(Try("((sig >= 10 && sig < 15) || sig == 17) && comm != \"bash\"").err, 0);
}

struct ErrorCase {
  std::string_view text;
  int err;
  size_t pos;  // where the kernel points; the file's caret stops at the end of the text
  std::string_view message;
};

// One or more cases of every message, in err_text[]'s order.
const ErrorCase kErrorCases[] = {
    {"count = 1", EINVAL, 7, "Invalid operator"},
    {"count", EINVAL, 6, "Invalid operator"},
    {"name !~ \"x\"", EINVAL, 6, "Invalid operator"},
    {"addr.function < foo", EINVAL, 17, "Invalid operator"},
    {"(count == 1", ENOENT, 0, "Too many '('"},
    {"count == 1 && (delta == 1", ENOENT, 14, "Too many '('"},
    {"count == 1)", EPERM, 10, "Too few '('"},
    {"(count == 1))", EPERM, 12, "Too few '('"},
    {"name == \"abc", ESRCH, 8, "Missing matching quote"},
    {"name == 'a\" && count == 1", ESRCH, 8, "Missing matching quote"},
    {"count == 1234567890123456789012345", EINVAL, 35, "Operand too long"},
    {"count == \"1\"", EINVAL, 10, "Expecting numeric field"},
    {"name == 1", EINVAL, 9, "Expecting string field"},
    {"COMM == 1", EINVAL, 9, "Expecting string field"},
    {"name < \"a\"", EINVAL, 8, "Illegal operation for field type"},
    {"count ~ 1", EINVAL, 9, "Illegal operation for field type"},
    {"count.function == foo", EINVAL, 19, "Illegal operation for field type"},
    {"nosuch == 1", EINVAL, 7, "Field not found"},
    {"count == 1 && nosuch == 1", EINVAL, 21, "Field not found"},
    {"count == -1", EINVAL, 10, "Illegal integer value"},  // unsigned field
    {"count == 12ab", EINVAL, 10, "Illegal integer value"},
    {"count == 08", EINVAL, 10, "Illegal integer value"},  // octal
    {"addr == 0x10000000000000000", EINVAL, 9, "Illegal integer value"},
    {"delta == -", EINVAL, 10, "Illegal integer value"},
    {"count == 1 delta == 2", EPERM, 11, "Too many terms in predicate expression"},
    {"count == 1 & delta == 2", EPERM, 11, "Too many terms in predicate expression"},
    {"(count == 1) (delta == 2)", EPERM, 13, "Too many terms in predicate expression"},
    {"name == abc", EINVAL, 9, "Invalid value (did you forget quotes)?"},
    {"count == +1", EINVAL, 10, "Invalid value (did you forget quotes)?"},
    {"addr.function == 0xg", EINVAL, 21, "Invalid value (did you forget quotes)?"},
    {"addr.function == foo", EINVAL, 21, "Function not found"},
    {"addr.function == 0x1000", EINVAL, 24, "Function not found"},
    {"!", EINVAL, 1, "No filter found"},
    {"  ! !", EINVAL, 5, "No filter found"},
};

TEST(FilterParseTest, EveryErrorClass) {
  for (const ErrorCase& c : kErrorCases) ExpectError(c.text, c.err, c.pos, c.message);
}

TEST(FilterParseTest, StringOperandTooLong) {
  std::string text = "name == \"" + std::string(256, 'a') + "\"";
  ExpectError(text, EINVAL, text.size(), "Operand too long");
  EXPECT_EQ(Try("name == \"" + std::string(255, 'a') + "\"").err, 0);
}

// Errors without a message: the kernel shows "Error: (0)".
TEST(FilterParseTest, ErrorsWithoutMessage) {
  for (auto [text, err] : {std::pair<std::string_view, int>{"", EINVAL}, {"()", EINVAL}, {"== 1", EPERM},
                           {"count == 1 && && delta == 1", EPERM}, {"(!)", EPERM}, {"!= 1", EPERM}}) {
    Result r = Try(text);
    EXPECT_EQ(r.err, err) << text;
    EXPECT_EQ(r.text, std::string(text) + "\nError: (0)\n") << text;
  }
}

TEST(FilterParseTest, TextEndsAtNul) {
  EXPECT_EQ(Try(std::string_view("count == 1\0garbage", 18)).err, 0);
}

TEST(FilterParseTest, DeepNestingParses) {
  std::string text = std::string(1000, '(') + "count == 1" + std::string(1000, ')');
  EXPECT_EQ(Try(text).err, 0);
  std::string nots;
  for (int i = 0; i < 600; ++i) nots += "!(";
  EXPECT_EQ(Try(nots + "count == 1" + std::string(600, ')')).err, 0);
}

}  // namespace
}  // namespace udiag::filter
