#include "trigger/hist_json.h"

#include <gtest/gtest.h>

#include "trigger/hist.h"

namespace udiag::trigger {
namespace {

TEST(HistJson, FromTheKernelsLayout) {
  std::vector<schema::Field> fields(1);
  fields[0] = {"u32", "seq", schema::FieldKind::kInteger, 8, 4, false, false};
  HistSpec spec;
  ASSERT_EQ(ParseHist("keys=common_pid.execname,seq.log2:vals=seq", fields, &spec), 0);
  Histogram h(spec);
  std::vector<uint8_t> record = {0, 0, 0, 0, 7, 0, 0, 0, 5, 0, 0, 0};
  h.Add({record, 0, "my app"});
  h.Add({record, 0, "my app"});
  EXPECT_EQ(HistTablesToJson(h.Render() + "\n\n" + h.Render()),
            "[{\"trigger\": \"hist:keys=common_pid.execname,seq.log2:vals=hitcount,seq:sort=hitcount:size=2048 "
            "[active]\", \"entries\": [{\"common_pid\": \"my app          [         7]\", \"seq\": \"~ 2^3\", "
            "\"hitcount\": 2, \"seq\": 10}], \"totals\": {\"hits\": 2, \"entries\": 1, \"dropped\": 0}},\n"
            " {\"trigger\": \"hist:keys=common_pid.execname,seq.log2:vals=hitcount,seq:sort=hitcount:size=2048 "
            "[active]\", \"entries\": [{\"common_pid\": \"my app          [         7]\", \"seq\": \"~ 2^3\", "
            "\"hitcount\": 2, \"seq\": 10}], \"totals\": {\"hits\": 2, \"entries\": 1, \"dropped\": 0}}]\n");
  EXPECT_EQ(HistTablesToJson(""), "[]\n");
}

}  // namespace
}  // namespace udiag::trigger
