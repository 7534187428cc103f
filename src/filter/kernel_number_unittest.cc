#include "filter/kernel_number.h"

#include <gtest/gtest.h>

namespace udiag::filter {
namespace {

TEST(KernelNumberTest, Unsigned) {
  EXPECT_EQ(KernelStrToU64("10"), 10u);
  EXPECT_EQ(KernelStrToU64("0x1F"), 31u);
  EXPECT_EQ(KernelStrToU64("017"), 15u);
  EXPECT_EQ(KernelStrToU64("0"), 0u);
  EXPECT_EQ(KernelStrToU64("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(KernelStrToU64("18446744073709551616"), std::nullopt);
  EXPECT_EQ(KernelStrToU64("08"), std::nullopt);
  EXPECT_EQ(KernelStrToU64("0x"), std::nullopt);
  EXPECT_EQ(KernelStrToU64("-1"), std::nullopt);
  EXPECT_EQ(KernelStrToU64(""), std::nullopt);
  EXPECT_EQ(KernelStrToU64("12a"), std::nullopt);
}

TEST(KernelNumberTest, Signed) {
  EXPECT_EQ(KernelStrToS64("-5"), -5);
  EXPECT_EQ(KernelStrToS64("-0x10"), -16);
  EXPECT_EQ(KernelStrToS64("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(KernelStrToS64("9223372036854775808"), std::nullopt);
  EXPECT_EQ(KernelStrToS64("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(KernelStrToS64("-9223372036854775809"), std::nullopt);
  EXPECT_EQ(KernelStrToS64("--1"), std::nullopt);
  EXPECT_EQ(KernelStrToS64("-"), std::nullopt);
}

}  // namespace
}  // namespace udiag::filter
