// A fixture for tests of a root daemon that other users reach: they switch
// users, so they need root (skipped otherwise), and the daemon's directory
// lies where uid 65534 can reach it.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "integration_util.h"

namespace udiag::integration {

class SystemDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to start a system daemon and switch users";
    ASSERT_FALSE(parent_.path().empty());
    ASSERT_EQ(chmod(parent_.path().c_str(), 0755), 0);
    dir_ = parent_.path() + "/udiag";
  }

  TempDir parent_;
  std::string dir_;
};

}  // namespace udiag::integration
