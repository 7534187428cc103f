#include "trigger/hist_error.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "trigger/hist.h"

namespace udiag::trigger {
namespace {

std::vector<schema::Field> Fields() {
  return {{"u32", "seq", schema::FieldKind::kInteger, 8, 4, false, false}};
}

// What ParseHist says about `param`, and where the caret goes in "hist:<param>".
std::string LogOf(std::string_view param) {
  HistSpec spec;
  HistError error;
  EXPECT_EQ(ParseHist(param, Fields(), &spec, &error), EINVAL) << param;
  return HistErrorLogEntry(12'345'678'901, "user_events", "ttest", "hist:" + std::string(param), error);
}

TEST(HistError, KernelLayoutWithTheCaretUnderTheCulprit) {
  EXPECT_EQ(LogOf("keys=nosuch"),
            "[   12.345678] hist:user_events:ttest: error: Couldn't find field\n"
            "  Command: hist:keys=nosuch\n"
            "                     ^\n");
  EXPECT_EQ(LogOf("keys=seq.bogus"),
            "[   12.345678] hist:user_events:ttest: error: Invalid field modifier\n"
            "  Command: hist:keys=seq.bogus\n"
            "                         ^\n");
}

TEST(HistError, EachClassHasItsMessage) {
  struct Case {
    std::string_view param;
    HistErrorCode code;
  };
  for (const Case& c : {Case{"keys=seq:x=seq,x=seq", HistErrorCode::kDuplicateVar},
                        Case{"keys=$x", HistErrorCode::kInvalidRefKey},
                        Case{"keys=seq:sort=seq.up", HistErrorCode::kInvalidSortModifier},
                        Case{"keys=seq:sort=nosuch", HistErrorCode::kInvalidSortField},
                        Case{"keys=seq:sort=seq,hitcount,seq", HistErrorCode::kTooManySortFields},
                        Case{"keys=seq:onmax(seq).save(seq)", HistErrorCode::kOnxNotVar},
                        Case{"keys=seq:onmax($x).save()", HistErrorCode::kNoSaveParams},
                        Case{"keys=seq:onmatch(a.b).save(seq)", HistErrorCode::kActionMismatch},
                        Case{"keys=seq:onmatch(ab).trace(x,seq)", HistErrorCode::kSubsysNotFound},
                        Case{"keys=seq:onmatch(a.b", HistErrorCode::kNoClosingParen},
                        Case{"keys=seq:x=seq+1x", HistErrorCode::kExpectNumber},
                        Case{"keys=seq:x=seq+1+2+3+4", HistErrorCode::kTooManySubexpr}}) {
    HistSpec spec;
    HistError error;
    EXPECT_EQ(ParseHist(c.param, Fields(), &spec, &error), EINVAL) << c.param;
    EXPECT_EQ(error.code, c.code) << c.param << ": " << HistErrorText(error.code);
  }
}

TEST(HistError, FirstErrorWinsAndAnUnfoundTokenPointsAtTheStart) {
  HistError error;
  EXPECT_EQ(HistFail(&error, HistErrorCode::kVarNotFound, "$ts0"), EINVAL);
  HistFail(&error, HistErrorCode::kFieldNotFound, "x");
  EXPECT_EQ(error.code, HistErrorCode::kVarNotFound);
  EXPECT_EQ(HistFail(nullptr, HistErrorCode::kFieldNotFound, "x"), EINVAL);
  EXPECT_NE(
      HistErrorLogEntry(0, "s", "e", "hist:keys=seq", error).find("  Command: hist:keys=seq\n           ^\n"),
      std::string::npos);
}

}  // namespace
}  // namespace udiag::trigger
