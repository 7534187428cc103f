#include "schema/timestamp_text.h"

#include <gtest/gtest.h>

namespace udiag::schema {
namespace {

TEST(TimestampTextTest, RoundsHalfMicrosecondUp) {
  EXPECT_EQ(RoundToMicros(1'234'567'891'499).micros, 567'891u);
  EXPECT_EQ(RoundToMicros(1'234'567'891'500).micros, 567'892u);
  EXPECT_EQ(RoundToMicros(1'234'567'891'999).micros, 567'892u);
}

TEST(TimestampTextTest, CarriesIntoSeconds) {
  SecondsMicros t = RoundToMicros(41'999'999'600);
  EXPECT_EQ(t.seconds, 42u);
  EXPECT_EQ(t.micros, 0u);
  EXPECT_EQ(RoundToMicros(UINT64_MAX).seconds, UINT64_MAX / 1000 / 1'000'000);
}

}  // namespace
}  // namespace udiag::schema
