// Every client call has a bound: with udiagd stopped (SIGSTOP), udiag_open,
// the register ioctl and consumer calls fail with ETIMEDOUT after
// UDIAG_TIMEOUT_MS instead of hanging; writes do not wait for it at all.
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include "integration_util.h"

namespace udiag::integration {
namespace {

// The bound the tests set, and a generous limit for the whole call.
constexpr const char* kTimeoutMs = "300";
constexpr auto kGenerous = 20s;

class ClientTimeoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("UDIAG_TIMEOUT_MS", kTimeoutMs, 1);  // inherited by the producers
    dir_ = parent_.path() + "/d";
    ASSERT_EQ(daemon_.Start(dir_), "");
  }
  void TearDown() override {
    if (stopped_) kill(daemon_.pid(), SIGCONT);
    unsetenv("UDIAG_TIMEOUT_MS");
  }
  void StopDaemon() {
    ASSERT_EQ(kill(daemon_.pid(), SIGSTOP), 0);
    stopped_ = true;
  }

  TempDir parent_;
  std::string dir_;
  DaemonProcess daemon_;
  bool stopped_ = false;
};

TEST_F(ClientTimeoutTest, OpenTimesOutOnAStoppedDaemon) {
  StopDaemon();
  EXPECT_EQ(RunProgram({Bin("hammer_producer"), "stalled", "1"}, {.udiag_dir = dir_}, kGenerous), 64 + ETIMEDOUT);
}

TEST_F(ClientTimeoutTest, RegisterTimesOutOnAStoppedDaemon) {
  pid_t producer = StartProcess({Bin("stall_producer"), "stalled"}, {.udiag_dir = dir_});
  ASSERT_GT(producer, 0);
  // udiag_open worked; the producer stopped itself before registering.
  int status = 0;
  ASSERT_EQ(waitpid(producer, &status, WUNTRACED), producer);
  ASSERT_TRUE(WIFSTOPPED(status)) << status;
  StopDaemon();
  ASSERT_EQ(kill(producer, SIGCONT), 0);
  EXPECT_EQ(WaitExit(producer, kGenerous), 128 + ETIMEDOUT);
}

TEST_F(ClientTimeoutTest, ConsumerCallsTimeOutOnAStoppedDaemon) {
  auto consumer = MustConnect(dir_);
  StopDaemon();
  auto read = consumer.Read("user_events_status");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error(), ETIMEDOUT);
  EXPECT_EQ(consumer.Write("tracing_on", "1", false), ETIMEDOUT);
  auto fresh = consumer::ConsumerClient::Connect(dir_);
  ASSERT_FALSE(fresh.ok());
  EXPECT_EQ(fresh.error(), ETIMEDOUT);
}

// A thread's first write hands the daemon its new ring; with the daemon
// stopped and a bound far beyond the test's limit, the writes still go on,
// and the daemon reads them once it continues.
TEST_F(ClientTimeoutTest, NewThreadWritesDoNotWaitForAStoppedDaemon) {
  setenv("UDIAG_TIMEOUT_MS", "600000", 1);
  auto consumer = MustConnect(dir_);
  ASSERT_EQ(consumer.AutoEnable("fresh"), 0);
  pid_t producer = StartProcess({Bin("new_thread_producer"), "fresh", "1000"}, {.udiag_dir = dir_});
  ASSERT_GT(producer, 0);
  int status = 0;
  ASSERT_EQ(waitpid(producer, &status, WUNTRACED), producer);
  ASSERT_TRUE(WIFSTOPPED(status)) << "exit status " << WEXITSTATUS(status);
  StopDaemon();
  ASSERT_EQ(kill(producer, SIGCONT), 0);
  EXPECT_EQ(WaitExit(producer, kGenerous), 0) << "a write waited for the stopped daemon";
  ASSERT_EQ(kill(daemon_.pid(), SIGCONT), 0);
  stopped_ = false;
  std::string trace;
  EXPECT_TRUE(PollUntil([&] {
    auto t = consumer.Read("trace");
    trace = t.ok() ? *t : "";
    return SeqsOf(trace, "fresh").size() == 1000;
  })) << SeqsOf(trace, "fresh").size() << " of 1000 events";
}

TEST_F(ClientTimeoutTest, CallsWorkAgainOnceTheDaemonContinues) {
  StopDaemon();
  EXPECT_EQ(RunProgram({Bin("hammer_producer"), "stalled", "1"}, {.udiag_dir = dir_}, kGenerous), 64 + ETIMEDOUT);
  ASSERT_EQ(kill(daemon_.pid(), SIGCONT), 0);
  stopped_ = false;
  EXPECT_EQ(ReadTree(dir_, "user_events_status"), "\nActive: 0\nBusy: 0\n");
}

}  // namespace
}  // namespace udiag::integration
