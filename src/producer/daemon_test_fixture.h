// A GoogleTest fixture for libudiag against a real udiagd: one private
// daemon for the suite, since the library connects once per process and
// stays with that daemon ($UDIAG_DIR points it there before the first
// call), and a consumer connection per test to enable events and read the
// trace. One such suite per test binary.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "consumer/consumer_client.h"
#include "consumer/private_daemon.h"

namespace udiag::producer {

class DaemonTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    daemon_ = consumer::PrivateDaemon::Start(&error).release();
    ASSERT_TRUE(daemon_) << error;
    setenv("UDIAG_DIR", daemon_->dir().c_str(), 1);
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }

  void SetUp() override {
    ASSERT_TRUE(daemon_);
    auto consumer = consumer::ConsumerClient::Connect(daemon_->dir());
    ASSERT_TRUE(consumer.ok());
    consumer_.emplace(std::move(consumer).value());
  }

  void SetEnabled(const std::string& event, bool on) {
    ASSERT_EQ(consumer_->Write("events/user_events/" + event + "/enable", on ? "1" : "0", false), 0);
  }

  static inline consumer::PrivateDaemon* daemon_ = nullptr;
  std::optional<consumer::ConsumerClient> consumer_;
};

}  // namespace udiag::producer
