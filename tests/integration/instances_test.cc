// Trace instances (instances/<name>/) through the control protocol: mkdir and
// rmdir with tracefs's errnos, per-instance enables and buffers, overwrite
// mode, snapshots, connection-owned instances and user_events_status.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "consumer/private_daemon.h"
#include "integration_util.h"

namespace udiag::integration {
namespace {

class InstancesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    daemon_ = consumer::PrivateDaemon::Start(&error);
    ASSERT_NE(daemon_, nullptr) << error;
    dir_ = daemon_->dir();
  }

  std::string Read(consumer::ConsumerClient& client, const std::string& path) {
    auto text = client.Read(path);
    EXPECT_TRUE(text.ok()) << path << ": " << text.error();
    return text.ok() ? *text : "";
  }

  // Runs hammer_producer for `count` events of `name` and waits for it.
  void Produce(const std::string& name, uint32_t count) {
    ASSERT_EQ(RunProgram({Bin("hammer_producer"), name, std::to_string(count)}, {.udiag_dir = dir_}), 0);
  }

  std::unique_ptr<consumer::PrivateDaemon> daemon_;
  std::string dir_;
};

TEST_F(InstancesTest, MkdirAndRmdirGiveTracefsErrnos) {
  auto client = MustConnect(dir_);
  EXPECT_EQ(client.Mkdir("instances/a"), 0);
  EXPECT_EQ(client.Mkdir("instances/a"), EEXIST);
  EXPECT_EQ(client.Mkdir("instances/.."), EINVAL);
  EXPECT_EQ(client.Mkdir("instances/has space"), EINVAL);
  EXPECT_EQ(client.Mkdir("instances/" + std::string(300, 'n')), EINVAL);
  EXPECT_EQ(client.Mkdir("events/x"), EPERM);
  EXPECT_EQ(client.Mkdir("instances/a/b"), EPERM);
  EXPECT_EQ(client.Mkdir("instances/b"), 0);

  auto listed = client.List("instances");
  ASSERT_TRUE(listed.ok());
  std::vector<std::pair<std::string, bool>> expected = {{"a", true}, {"b", true}};
  EXPECT_EQ(*listed, expected);
  auto files = client.List("instances/a");
  ASSERT_TRUE(files.ok());
  auto has = [&](const std::string& name) {
    return std::any_of(files->begin(), files->end(), [&](const auto& e) { return e.first == name; });
  };
  for (const char* name : {"events", "options", "set_event", "snapshot", "trace", "trace_pipe", "tracing_on",
                           "buffer_size_kb"}) {
    EXPECT_TRUE(has(name)) << name;
  }
  EXPECT_FALSE(has("dynamic_events"));  // global files live only at the top
  EXPECT_FALSE(has("instances"));
  EXPECT_EQ(client.Read("instances/a/user_events_status").error(), ENOENT);

  EXPECT_EQ(client.Rmdir("instances/a"), 0);
  EXPECT_EQ(client.Rmdir("instances/a"), ENOENT);
  EXPECT_EQ(client.Read("instances/a/trace").error(), ENOENT);
  EXPECT_EQ(client.Rmdir("events"), EPERM);

  // An open trace_pipe keeps the instance busy, as in ftrace.
  auto reader = std::make_unique<consumer::ConsumerClient>(MustConnect(dir_));
  std::atomic<bool> stop{false};
  std::thread streaming([&] { reader->StreamPipe("instances/b/trace_pipe", [](std::string_view) { return true; }, &stop); });
  std::this_thread::sleep_for(300ms);  // let the pipe request reach the daemon
  EXPECT_EQ(client.Rmdir("instances/b"), EBUSY);
  stop = true;
  streaming.join();
  reader.reset();  // the daemon learns of the reader's end when its connection closes
  EXPECT_TRUE(PollUntil([&] { return client.Rmdir("instances/b") == 0; }));
}

TEST_F(InstancesTest, InstancesTraceIndependentlyAndRmdirReleasesEnables) {
  auto client = MustConnect(dir_);
  ASSERT_EQ(client.Write("dynamic_events", "u:ev u32 seq", true), 0);
  ASSERT_EQ(client.Mkdir("instances/one"), 0);
  ASSERT_EQ(client.Mkdir("instances/two"), 0);
  ASSERT_EQ(client.Write("instances/one/events/user_events/ev/enable", "1", false), 0);
  ASSERT_EQ(client.Write("instances/two/set_event", "user_events:ev", false), 0);
  EXPECT_EQ(Read(client, "instances/two/events/enable"), "1\n");
  EXPECT_EQ(Read(client, "instances/two/set_event"), "user_events:ev\n");
  EXPECT_EQ(Read(client, "events/user_events/ev/enable"), "0\n");
  EXPECT_EQ(Read(client, "user_events_status"), "ev # Used by ftrace\n\nActive: 1\nBusy: 1\n");
  ASSERT_EQ(client.Write("instances/two/tracing_on", "0", false), 0);

  Produce("ev", 10);
  EXPECT_TRUE(PollUntil([&] { return SeqsOf(Read(client, "instances/one/trace"), "ev").size() == 10; }))
      << Read(client, "instances/one/trace");
  EXPECT_EQ(CheckExactlyOnce(SeqsOf(Read(client, "instances/one/trace"), "ev"), 10), "");
  EXPECT_TRUE(SeqsOf(Read(client, "instances/two/trace"), "ev").empty()) << "tracing_on is 0 there";
  EXPECT_TRUE(SeqsOf(Read(client, "trace"), "ev").empty()) << "the top instance does not enable ev";

  // The enable bit stays while any instance enables the event.
  ASSERT_EQ(client.Rmdir("instances/one"), 0);
  EXPECT_EQ(Read(client, "user_events_status"), "ev # Used by ftrace\n\nActive: 1\nBusy: 1\n");
  ASSERT_EQ(client.Rmdir("instances/two"), 0);
  EXPECT_EQ(Read(client, "user_events_status"), "ev\n\nActive: 1\nBusy: 0\n");
  // No reference is left behind: the event can be deleted.
  EXPECT_EQ(client.Write("dynamic_events", "-:ev u32 seq", true), 0);
}

TEST_F(InstancesTest, OverwriteKeepsTheNewestAndSnapshotFreezesThem) {
  auto client = MustConnect(dir_);
  ASSERT_EQ(client.Write("dynamic_events", "u:fr u32 seq", true), 0);
  for (const char* name : {"flight", "discard"}) {
    std::string base = std::string("instances/") + name + "/";
    ASSERT_EQ(client.Mkdir(base.substr(0, base.size() - 1)), 0);
    ASSERT_EQ(client.Write(base + "buffer_size_kb", "128", false), 0);
    ASSERT_EQ(client.Write(base + "events/enable", "1", false), 0);
  }
  ASSERT_EQ(client.Write("instances/flight/options/overwrite", "1", false), 0);
  EXPECT_EQ(Read(client, "instances/flight/options/overwrite"), "1\n");
  EXPECT_EQ(Read(client, "instances/discard/options/overwrite"), "0\n");
  EXPECT_EQ(client.Write("instances/flight/options/overwrite", "2", false), EINVAL);

  constexpr uint32_t kCount = 20000;  // far more than 128 kB holds
  Produce("fr", kCount);
  std::map<uint32_t, int> flight;
  ASSERT_TRUE(PollUntil([&] {
    flight = SeqsOf(Read(client, "instances/flight/trace"), "fr");
    return flight.contains(kCount - 1);
  })) << "the newest event is missing";
  // The newest events, each once and without a gap, within the buffer's size.
  EXPECT_GT(flight.begin()->first, 0u);
  EXPECT_EQ(flight.rbegin()->first - flight.begin()->first + 1, flight.size());
  EXPECT_LE(flight.size() * 56, 128u * 1024);  // an entry takes 56 bytes
  EXPECT_TRUE(std::all_of(flight.begin(), flight.end(), [](const auto& e) { return e.second == 1; }));
  // Discard-new keeps the oldest instead.
  auto discard = SeqsOf(Read(client, "instances/discard/trace"), "fr");
  ASSERT_FALSE(discard.empty());
  EXPECT_EQ(discard.begin()->first, 0u);
  EXPECT_FALSE(discard.contains(kCount - 1));

  EXPECT_NE(Read(client, "instances/flight/snapshot").find("Snapshot is freed"), std::string::npos);
  ASSERT_EQ(client.Write("instances/flight/snapshot", "1", false), 0);
  ASSERT_EQ(client.Write("instances/flight/trace", "", false), 0);  // clear the live buffer
  EXPECT_TRUE(SeqsOf(Read(client, "instances/flight/trace"), "fr").empty());
  EXPECT_EQ(SeqsOf(Read(client, "instances/flight/snapshot"), "fr"), flight);
  ASSERT_EQ(client.Write("instances/flight/snapshot", "0", false), 0);
  EXPECT_NE(Read(client, "instances/flight/snapshot").find("Snapshot is freed"), std::string::npos);
}

TEST_F(InstancesTest, OwnedInstanceGoesWhenItsClientIsKilled) {
  auto client = MustConnect(dir_);
  ASSERT_EQ(client.Write("dynamic_events", "u:rec u32 seq", true), 0);
  ASSERT_EQ(client.Write("dynamic_events", "u:plain u32 seq", true), 0);
  ASSERT_EQ(client.Write("events/user_events/plain/enable", "1", false), 0);

  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // a recorder: an owned instance, auto-enabling in it
    auto session = consumer::ConsumerClient::Connect(dir_);
    bool ok = session.ok() && session->Mkdir("instances/session", /*owned=*/true) == 0 &&
              session->AutoEnable("rec", "session") == 0;
    (void)!write(ready[1], ok ? "y" : "n", 1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char answer = 0;
  ASSERT_EQ(read(ready[0], &answer, 1), 1);
  close(ready[0]);
  ASSERT_EQ(answer, 'y');

  EXPECT_EQ(Read(client, "instances/session/events/user_events/rec/enable"), "1\n");
  EXPECT_EQ(Read(client, "user_events_status"),
            "rec # Used by ftrace record\nplain # Used by ftrace\n\nActive: 2\nBusy: 2\n");
  EXPECT_EQ(client.Mkdir("instances/session"), EEXIST);

  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(PollUntil([&] { return client.Read("instances/session/trace").error() == ENOENT; }));
  EXPECT_EQ(Read(client, "user_events_status"), "rec\nplain # Used by ftrace\n\nActive: 2\nBusy: 1\n");
  auto listed = client.List("instances");
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
}

}  // namespace
}  // namespace udiag::integration
