// (h) Auto-enables are reference counted across consumers.
#include <thread>

#include <gtest/gtest.h>

#include "consumer/private_daemon.h"
#include "integration_util.h"

namespace udiag::integration {
namespace {

TEST(AutoEnableTest, EventStaysEnabledWhileAnotherConsumerHoldsIt) {
  std::string error;
  auto daemon = consumer::PrivateDaemon::Start(&error);
  ASSERT_NE(daemon, nullptr) << error;
  const std::string dir = daemon->dir();
  auto first = std::make_unique<consumer::ConsumerClient>(MustConnect(dir));
  auto second = std::make_unique<consumer::ConsumerClient>(MustConnect(dir));
  ASSERT_EQ(first->AutoEnable("shared"), 0);
  ASSERT_EQ(second->AutoEnable("user_events:shared"), 0);

  // The event is created (and enabled) when the producer registers.
  ASSERT_EQ(RunProgram({Bin("hammer_producer"), "shared", "10"}, {.udiag_dir = dir}), 0);
  auto enable = second->Read("events/user_events/shared/enable");
  ASSERT_TRUE(enable.ok()) << enable.error();
  EXPECT_EQ(*enable, "1\n");

  first.reset();  // disconnect the first consumer
  // Make sure the daemon has processed the disconnect: a round trip on a
  // new connection after a pause, then the state must still be enabled.
  std::this_thread::sleep_for(300ms);
  ASSERT_EQ(ReadTree(dir, "tracing_on"), "1\n");
  enable = second->Read("events/user_events/shared/enable");
  ASSERT_TRUE(enable.ok()) << enable.error();
  EXPECT_EQ(*enable, "1\n") << "disabled although the second consumer still auto-enables it";
  auto status = second->Read("user_events_status");
  ASSERT_TRUE(status.ok());
  EXPECT_NE(status->find("shared # Used by ftrace"), std::string::npos) << *status;

  // A producer started now writes, and its events arrive.
  ASSERT_EQ(second->Write("trace", "", false), 0);
  ASSERT_EQ(RunProgram({Bin("hammer_producer"), "shared", "20"}, {.udiag_dir = dir}), 0);
  std::string trace;
  EXPECT_TRUE(PollUntil([&] {
    auto t = second->Read("trace");
    trace = t.ok() ? *t : "";
    return SeqsOf(trace, "shared").size() == 20;
  })) << trace;

  // Control: once the last holder goes, the event is disabled (and, being
  // non-persistent with no producer left, deleted).
  second.reset();
  EXPECT_TRUE(PollUntil([&] {
    std::string s = ReadTree(dir, "user_events_status");
    return s == "\nActive: 0\nBusy: 0\n";
  })) << ReadTree(dir, "user_events_status");
}

TEST(AutoEnableTest, ExplicitEnableIsNotUndoneByAnAutoEnableRelease) {
  std::string error;
  auto daemon = consumer::PrivateDaemon::Start(&error);
  ASSERT_NE(daemon, nullptr) << error;
  const std::string dir = daemon->dir();
  auto admin = MustConnect(dir);
  ASSERT_EQ(admin.Write("dynamic_events", "u:manual u32 seq", true), 0);
  ASSERT_EQ(admin.Write("events/user_events/manual/enable", "1", false), 0);
  {
    auto temporary = MustConnect(dir);
    ASSERT_EQ(temporary.AutoEnable("manual"), 0);
  }
  std::this_thread::sleep_for(300ms);
  auto enable = admin.Read("events/user_events/manual/enable");
  ASSERT_TRUE(enable.ok());
  EXPECT_EQ(*enable, "1\n");
}

}  // namespace
}  // namespace udiag::integration
