#include "filter/filter_error.h"

#include <gtest/gtest.h>

namespace udiag::filter {
namespace {

TEST(FilterErrorTest, Texts) {
  EXPECT_EQ(ErrorText(ErrorCode::kFieldNotFound), "Field not found");
  EXPECT_EQ(ErrorText(ErrorCode::kBadSubsysFilter), "Couldn't find or set field in one of a subsystem's events");
  EXPECT_EQ(ErrorText(ErrorCode::kNoFilter), "No filter found");
}

TEST(FilterErrorTest, FileTextPutsTheCaretUnderPosCappedAtTheEnd) {
  EXPECT_EQ(ErrorFileText("a == 1", {ErrorCode::kFieldNotFound, 2}), "a == 1\n  ^\nparse_error: Field not found\n");
  EXPECT_EQ(ErrorFileText("ab", {ErrorCode::kInvalidOp, 9}), "ab\n  ^\nparse_error: Invalid operator\n");
  EXPECT_EQ(ErrorFileText("== 1", {ErrorCode::kNone, 0}), "== 1\nError: (0)\n");
}

TEST(FilterErrorTest, ErrorLogEntry) {
  EXPECT_EQ(ErrorLogEntry(1'234'567'891'000, "x == 1", {ErrorCode::kFieldNotFound, 2}),
            "[ 1234.567891] event filter parse error: error: Field not found\n"
            "  Command: x == 1\n"
            "             ^\n");
  EXPECT_EQ(ErrorLogEntry(0, "== 1", {ErrorCode::kNone, 5}),
            "[    0.000000] event filter parse error: error: Error\n"
            "  Command: == 1\n"
            "           ^\n");
}

}  // namespace
}  // namespace udiag::filter
