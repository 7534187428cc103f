#include "base/client_timeout.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace udiag::base {
namespace {

class ClientTimeoutTest : public ::testing::Test {
 protected:
  ~ClientTimeoutTest() override { unsetenv("UDIAG_TIMEOUT_MS"); }
};

TEST_F(ClientTimeoutTest, DefaultsToFiveSeconds) {
  unsetenv("UDIAG_TIMEOUT_MS");
  EXPECT_EQ(ClientTimeoutMs(), 5000u);
}

TEST_F(ClientTimeoutTest, TakesAPositiveNumberFromTheEnvironment) {
  setenv("UDIAG_TIMEOUT_MS", "250", 1);
  EXPECT_EQ(ClientTimeoutMs(), 250u);
}

TEST_F(ClientTimeoutTest, IgnoresWhatIsNotAPositiveNumber) {
  for (const char* text : {"0", "-5", "12ms", "", "99999999999"}) {
    setenv("UDIAG_TIMEOUT_MS", text, 1);
    EXPECT_EQ(ClientTimeoutMs(), kDefaultClientTimeoutMs) << text;
  }
}

TEST(TimeoutErrnoTest, SocketTimeoutsBecomeEtimedout) {
  EXPECT_EQ(TimeoutErrno(EAGAIN), ETIMEDOUT);
  EXPECT_EQ(TimeoutErrno(EPIPE), EPIPE);
  EXPECT_EQ(TimeoutErrno(0), 0);
}

}  // namespace
}  // namespace udiag::base
