// The checks udiag_writev makes of its arguments before it looks at the
// event: writev's own errors, in writev's order, with no daemon involved.
#include <limits.h>
#include <sys/uio.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>

#include "udiag/udiag.h"

namespace {

constexpr int kNoSuchFd = 1 << 20;

ssize_t WriteV(const iovec* iov, int count) {
  errno = 0;
  return udiag_writev(kNoSuchFd, iov, count);
}

TEST(WritePathTest, ACountOutsideZeroToIovMaxIsEinval) {
  int32_t index = 0;
  iovec iov[1] = {{&index, sizeof(index)}};
  EXPECT_EQ(WriteV(iov, -1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(WriteV(iov, IOV_MAX + 1), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST(WritePathTest, LengthsSummingPastSsizeMaxAreEinval) {
  int32_t index = 0;
  // Never read: the sum is refused first.
  iovec apart[2] = {{&index, sizeof(index)}, {&index, SSIZE_MAX}};
  EXPECT_EQ(WriteV(apart, 2), -1);
  EXPECT_EQ(errno, EINVAL);
  iovec three[3] = {{&index, SSIZE_MAX / 2 + 1}, {&index, SSIZE_MAX / 2 + 1}, {&index, 0}};
  EXPECT_EQ(WriteV(three, 3), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST(WritePathTest, FewerBytesThanAnIndexAreEfault) {
  uint8_t bytes[3] = {};
  iovec none[1] = {{bytes, 0}};
  EXPECT_EQ(WriteV(none, 0), -1);
  EXPECT_EQ(errno, EFAULT);
  iovec split[2] = {{bytes, 2}, {bytes, 1}};
  EXPECT_EQ(WriteV(split, 2), -1);
  EXPECT_EQ(errno, EFAULT);
}

TEST(WritePathTest, ANegativeIndexIsEinvalWhereverItsBytesAre) {
  const int32_t index = -1;
  const auto* bytes = reinterpret_cast<const uint8_t*>(&index);
  uint64_t payload = 0;
  iovec apart[2] = {{const_cast<int32_t*>(&index), sizeof(index)}, {&payload, sizeof(payload)}};
  EXPECT_EQ(WriteV(apart, 2), -1);
  EXPECT_EQ(errno, EINVAL);
  iovec split[3] = {{const_cast<uint8_t*>(bytes), 1}, {const_cast<uint8_t*>(bytes) + 1, 3}, {&payload, 8}};
  EXPECT_EQ(WriteV(split, 3), -1);
  EXPECT_EQ(errno, EINVAL);
}

}  // namespace
