#include "base/errno_name.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace udiag::base {
namespace {

TEST(ErrnoNameTest, NamesKnownValues) {
  EXPECT_EQ(ErrnoName(EADDRINUSE), "EADDRINUSE");
  EXPECT_EQ(ErrnoName(EBADF), "EBADF");
  EXPECT_EQ(DescribeErrno(ENOENT), "ENOENT: No such file or directory");
}

TEST(ErrnoNameTest, FallsBackToTheNumber) { EXPECT_EQ(ErrnoName(4321), "errno 4321"); }

}  // namespace
}  // namespace udiag::base
