// (d) Restarting the daemon on the same directory, and refusing a second
// daemon on a live one.
#include <unistd.h>

#include <gtest/gtest.h>

#include "consumer/private_daemon.h"
#include "integration_util.h"

namespace udiag::integration {
namespace {

// Runs a producer of `count` events against `dir` and checks they all arrive.
void ExpectProducerWorks(const std::string& dir, const std::string& event, uint32_t count) {
  auto consumer = MustConnect(dir);
  ASSERT_EQ(consumer.AutoEnable(event), 0);
  ASSERT_EQ(RunProgram({Bin("hammer_producer"), event, std::to_string(count)}, {.udiag_dir = dir}), 0);
  std::string trace;
  EXPECT_TRUE(PollUntil([&] {
    auto t = consumer.Read("trace");
    trace = t.ok() ? *t : "";
    return SeqsOf(trace, event).size() == count;
  })) << trace;
  EXPECT_EQ(CheckExactlyOnce(SeqsOf(trace, event), count), "");
}

TEST(DaemonRestartTest, NewDaemonOnTheSameDirectoryServesNewProducers) {
  TempDir parent;
  std::string dir = parent.path() + "/d";
  DaemonProcess first;
  ASSERT_EQ(first.Start(dir), "");
  ExpectProducerWorks(dir, "before", 20);
  EXPECT_EQ(first.Stop(), 0) << "udiagd should exit cleanly on SIGTERM";

  // Nobody serves the directory now.
  EXPECT_EQ(RunProgram({Bin("hammer_producer"), "orphan", "1"}, {.udiag_dir = dir}), 64 + ENOENT);

  DaemonProcess second;
  ASSERT_EQ(second.Start(dir), "");
  // A fresh domain: nothing of the old daemon's events.
  EXPECT_EQ(ReadTree(dir, "user_events_status"), "\nActive: 0\nBusy: 0\n");
  ExpectProducerWorks(dir, "after", 20);
}

TEST(DaemonRestartTest, RestartAfterTheDaemonWasKilled) {
  TempDir parent;
  std::string dir = parent.path() + "/d";
  DaemonProcess first;
  ASSERT_EQ(first.Start(dir), "");
  ASSERT_EQ(kill(first.pid(), SIGKILL), 0);
  EXPECT_EQ(first.Stop(), 128 + SIGKILL);
  // The killed daemon left its socket and lock file; a new one takes over.
  DaemonProcess second;
  ASSERT_EQ(second.Start(dir), "");
  ExpectProducerWorks(dir, "after_kill", 20);
}

TEST(DaemonRestartTest, SecondDaemonOnALiveDirectoryRefuses) {
  std::string error;
  auto daemon = consumer::PrivateDaemon::Start(&error);
  ASSERT_NE(daemon, nullptr) << error;
  TempDir scratch;
  std::string err_path = scratch.path() + "/stderr";
  int status = RunProgram({Bin("udiagd"), "--dir", daemon->dir()}, {.stderr_path = err_path}, 5s);
  EXPECT_NE(status, 0);
  EXPECT_NE(status, -1) << "the second udiagd did not exit";
  std::string message = ReadFileText(err_path);
  EXPECT_NE(message.find("pid " + std::to_string(daemon->pid())), std::string::npos) << message;
  // The first daemon is untouched and still serves.
  EXPECT_TRUE(ProcessRunning(daemon->pid()));
  ExpectProducerWorks(daemon->dir(), "still_served", 10);
}

}  // namespace
}  // namespace udiag::integration
