// (d) Restarting the daemon on the same directory, and refusing a second
// daemon on a live one; producers that outlive their daemon reconnect to the
// next one by themselves.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

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

// Lines of restart_producer's stdout that start with `word`.
int LinesStartingWith(const std::string& path, const std::string& word) {
  std::string text = "\n" + ReadFileText(path);
  int n = 0;
  for (size_t pos = text.find("\n" + word + " "); pos != std::string::npos; pos = text.find("\n" + word + " ", pos + 1)) {
    ++n;
  }
  return n;
}

std::string TraceOf(consumer::ConsumerClient& consumer) {
  auto t = consumer.Read("trace");
  return t.ok() ? *t : "";
}

// A producer keeps running and writing while its daemon is killed and
// another is started on the same directory: its enable bit is cleared while
// there is no daemon, it registers again by itself, a consumer of the new
// daemon that enables the event gets its events, and what was written in
// between is reported lost.
TEST(DaemonRestartTest, RunningProducerSurvivesADaemonRestart) {
  TempDir parent;
  std::string dir = parent.path() + "/d";
  std::string out = parent.path() + "/producer.out";
  DaemonProcess first;
  ASSERT_EQ(first.Start(dir), "");
  auto before = MustConnect(dir);
  ASSERT_EQ(before.AutoEnable("survivor"), 0);
  pid_t producer = StartProcess({Bin("restart_producer"), "survivor", "1"}, {.udiag_dir = dir, .stdout_path = out});
  ASSERT_GT(producer, 0);
  ASSERT_TRUE(PollUntil([&] { return LinesStartingWith(out, "enabled") == 1; })) << ReadFileText(out);
  EXPECT_TRUE(PollUntil([&] { return !SeqsOf(TraceOf(before), "survivor").empty(); }));

  // A stopped daemon drains nothing: what the producer writes now stays in
  // its ring, and dies with the daemon.
  ASSERT_EQ(kill(first.pid(), SIGSTOP), 0);
  std::this_thread::sleep_for(200ms);
  ASSERT_EQ(kill(first.pid(), SIGKILL), 0);
  EXPECT_EQ(first.Stop(), 128 + SIGKILL);
  EXPECT_TRUE(PollUntil([&] { return LinesStartingWith(out, "disabled") == 1; }))
      << "the enable bit must be cleared while there is no daemon: " << ReadFileText(out);

  DaemonProcess second;
  ASSERT_EQ(second.Start(dir), "");
  auto after = MustConnect(dir);
  ASSERT_EQ(after.AutoEnable("survivor"), 0);
  EXPECT_TRUE(PollUntil([&] { return LinesStartingWith(out, "enabled") == 2; }))
      << "the producer did not register again on the new daemon: " << ReadFileText(out);
  std::string trace;
  EXPECT_TRUE(PollUntil([&] {
    trace = TraceOf(after);
    return !SeqsOf(trace, "survivor").empty();
  })) << trace.substr(0, 2000);
  // The writer is the producer's thread (TASK-PID shows the thread id).
  const std::string task = "restart_produce-";
  size_t at = trace.find(task);
  ASSERT_NE(at, std::string::npos) << trace.substr(0, 2000);
  std::string tid = std::to_string(atoi(trace.c_str() + at + task.size()));
  EXPECT_EQ(access(("/proc/" + std::to_string(producer) + "/task/" + tid).c_str(), F_OK), 0)
      << "thread " << tid << " is not the producer's";
  EXPECT_GT(LostCount(trace), 0u) << "the events that died with the old daemon must be counted\n"
                                  << trace.substr(0, 2000);

  ASSERT_EQ(kill(producer, SIGTERM), 0);
  EXPECT_EQ(WaitExit(producer), 0) << "the producer must not crash: " << ReadFileText(out);
  EXPECT_EQ(LinesStartingWith(out, "done"), 1) << ReadFileText(out);
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
