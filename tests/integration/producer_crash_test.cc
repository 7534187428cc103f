// (c) A producer killed with SIGKILL in the middle of a stream.
#include <signal.h>

#include <gtest/gtest.h>

#include "consumer/private_daemon.h"
#include "integration_util.h"

namespace udiag::integration {
namespace {

TEST(ProducerCrashTest, KilledProducerLeavesDaemonHealthyAndItsEventsAutoDelete) {
  std::string error;
  auto daemon = consumer::PrivateDaemon::Start(&error);
  ASSERT_NE(daemon, nullptr) << error;
  const std::string dir = daemon->dir();

  auto holder = std::make_unique<consumer::ConsumerClient>(MustConnect(dir));
  ASSERT_EQ(holder->AutoEnable("victim"), 0);
  pid_t victim = StartProcess({Bin("hammer_producer"), "victim", "1000000", "1000"}, {.udiag_dir = dir});
  ASSERT_GT(victim, 0);

  // Wait until it is mid-stream: some events are in the trace.
  size_t seen_before_kill = 0;
  ASSERT_TRUE(PollUntil([&] {
    seen_before_kill = SeqsOf(ReadTree(dir, "trace"), "victim").size();
    return seen_before_kill >= 50;
  }, 10s)) << "victim never wrote";
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  EXPECT_EQ(WaitExit(victim, 5s), 128 + SIGKILL);

  // Everything it committed is delivered: 0..max without gaps.
  std::map<uint32_t, int> seqs;
  ASSERT_TRUE(PollUntil([&] {
    auto before = seqs.size();
    seqs = SeqsOf(ReadTree(dir, "trace"), "victim");
    return !seqs.empty() && seqs.size() == before;  // stable
  }, 5s));
  uint32_t max_seq = seqs.rbegin()->first;
  EXPECT_GE(seqs.size(), seen_before_kill);
  EXPECT_EQ(CheckExactlyOnce(seqs, max_seq + 1), "");

  // The daemon is healthy: a new consumer and a new producer work.
  auto fresh = MustConnect(dir);
  ASSERT_EQ(fresh.AutoEnable("survivor"), 0);
  ASSERT_EQ(RunProgram({Bin("hammer_producer"), "survivor", "100"}, {.udiag_dir = dir}), 0);
  std::string trace;
  ASSERT_TRUE(PollUntil([&] {
    trace = ReadTree(dir, "trace");
    return SeqsOf(trace, "survivor").size() == 100;
  })) << trace.substr(trace.size() > 4000 ? trace.size() - 4000 : 0);
  EXPECT_EQ(CheckExactlyOnce(SeqsOf(trace, "survivor"), 100), "");

  // The dead producer's non-persistent event is busy while enabled...
  auto status = fresh.Read("user_events_status");
  ASSERT_TRUE(status.ok());
  EXPECT_NE(status->find("victim # Used by ftrace\n"), std::string::npos) << *status;
  // ...and goes away once disabled (its holder disconnects).
  holder.reset();
  ASSERT_TRUE(PollUntil([&] {
    status = fresh.Read("user_events_status");
    return status.ok() && status->find("victim") == std::string::npos;
  })) << (status.ok() ? *status : std::string("read failed"));
  EXPECT_NE(status->find("survivor"), std::string::npos) << *status;  // still held by `fresh`
  EXPECT_EQ(fresh.Read("events/user_events/victim/enable").error(), ENOENT);
  EXPECT_TRUE(ProcessRunning(daemon->pid()));
}

}  // namespace
}  // namespace udiag::integration
