#include "consumer/consumer_client.h"

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "consumer/private_daemon.h"

namespace udiag::consumer {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(ConsumerClientConnectTest, SaysWhenNoDaemonServesTheDirectory) {
  std::string dir = std::filesystem::temp_directory_path() / "udiag-consumer-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  auto client = ConsumerClient::Connect(dir);
  std::filesystem::remove(dir);
  ASSERT_FALSE(client.ok());
  EXPECT_TRUE(IsNoDaemonError(client.error()));
}

class ConsumerClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    daemon_ = PrivateDaemon::Start(&error);
    ASSERT_NE(daemon_, nullptr) << error;
  }

  ConsumerClient Connect() {
    auto client = ConsumerClient::Connect(daemon_->dir());
    EXPECT_TRUE(client.ok()) << client.error();
    return std::move(client).value();
  }

  std::string ReadOrDie(ConsumerClient& client, const std::string& path) {
    auto text = client.Read(path);
    EXPECT_TRUE(text.ok()) << path << ": " << text.error();
    return text.ok() ? *text : "";
  }

  // Polls `path` until it reads `expected` (connection teardown in the daemon
  // is asynchronous to our close()).
  bool Eventually(ConsumerClient& client, const std::string& path, const std::string& expected) {
    for (int i = 0; i < 100; ++i) {
      if (ReadOrDie(client, path) == expected) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  std::unique_ptr<PrivateDaemon> daemon_;
};

TEST_F(ConsumerClientTest, ListsTheRoot) {
  ConsumerClient client = Connect();
  auto entries = client.List("");
  ASSERT_TRUE(entries.ok()) << entries.error();
  EXPECT_THAT(*entries, Contains(Pair("events", true)));
  EXPECT_THAT(*entries, Contains(Pair("user_events_status", false)));
}

TEST_F(ConsumerClientTest, ReturnsTheDaemonsErrno) {
  ConsumerClient client = Connect();
  auto missing = client.Read("no_such_file");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), ENOENT);
  EXPECT_EQ(client.Write("events", "1\n", false), EISDIR);
  // The connection is still usable after a refusal.
  EXPECT_EQ(ReadOrDie(client, "tracing_on"), "1\n");
}

TEST_F(ConsumerClientTest, WritesDynamicEvents) {
  ConsumerClient client = Connect();
  ASSERT_EQ(client.Write("dynamic_events", "u:test u32 count\n", /*append=*/true), 0);
  EXPECT_THAT(ReadOrDie(client, "user_events_status"), HasSubstr("test\n"));
  EXPECT_EQ(ReadOrDie(client, "events/user_events/test/enable"), "0\n");
}

TEST_F(ConsumerClientTest, ReassemblesReadsLargerThanOneMessage) {
  ConsumerClient client = Connect();
  std::string expected;
  for (int i = 0; i < 2000; ++i) {
    std::string line = "u:a_rather_long_event_name_number_" + std::to_string(i) + " u32 count\n";
    ASSERT_EQ(client.Write("dynamic_events", line, true), 0);
    expected += line;
  }
  ASSERT_GT(expected.size(), 64u * 1024);
  std::string listing = ReadOrDie(client, "dynamic_events");
  EXPECT_EQ(listing.size(), expected.size());
  EXPECT_THAT(listing, HasSubstr("a_rather_long_event_name_number_1999 u32 count\n"));
}

TEST_F(ConsumerClientTest, AutoEnableLastsAsLongAsTheConnection) {
  ConsumerClient admin = Connect();
  ASSERT_EQ(admin.Write("dynamic_events", "u:early u32 count\n", true), 0);
  {
    ConsumerClient tracer = Connect();
    ASSERT_EQ(tracer.AutoEnable("user_events:*"), 0);
    EXPECT_EQ(ReadOrDie(admin, "events/user_events/early/enable"), "1\n");
    ASSERT_EQ(admin.Write("dynamic_events", "u:late u32 count\n", true), 0);
    EXPECT_EQ(ReadOrDie(admin, "events/user_events/late/enable"), "1\n");
  }
  EXPECT_TRUE(Eventually(admin, "events/user_events/early/enable", "0\n"));
  EXPECT_TRUE(Eventually(admin, "events/user_events/late/enable", "0\n"));
}

TEST_F(ConsumerClientTest, BareAutoEnableGlobMatchesTracepointNames) {
  ConsumerClient client = Connect();
  ASSERT_EQ(client.Write("dynamic_events", "u:count_a u32 n\n", true), 0);
  ASSERT_EQ(client.Write("dynamic_events", "u:other u32 n\n", true), 0);
  ASSERT_EQ(client.AutoEnable("count_*"), 0);
  EXPECT_EQ(ReadOrDie(client, "events/user_events/count_a/enable"), "1\n");
  EXPECT_EQ(ReadOrDie(client, "events/user_events/other/enable"), "0\n");
}

TEST_F(ConsumerClientTest, StreamPipeReportsARefusal) {
  ConsumerClient client = Connect();
  EXPECT_EQ(client.StreamPipe("no/trace_pipe", [](std::string_view) { return true; }), ENOENT);
}

TEST_F(ConsumerClientTest, StreamPipeStopsWhenAskedAfterTheQuietPeriod) {
  ConsumerClient client = Connect();
  std::atomic<bool> stop{true};
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(client.StreamPipe("trace_pipe", [](std::string_view) { return true; }, &stop,
                              std::chrono::milliseconds(150)),
            0);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(150));
  EXPECT_LT(took, std::chrono::seconds(1));
}

TEST_F(ConsumerClientTest, StreamPipeNoticesAStopFlagSetLater) {
  ConsumerClient client = Connect();
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stop = true;
  });
  EXPECT_EQ(client.StreamPipe("trace_pipe", [](std::string_view) { return true; }, &stop), 0);
  stopper.join();
}

TEST_F(ConsumerClientTest, ReportsADaemonThatWentAway) {
  ConsumerClient client = Connect();
  daemon_.reset();
  auto text = client.Read("tracing_on");
  ASSERT_FALSE(text.ok());
  EXPECT_TRUE(text.error() == ECONNRESET || text.error() == EPIPE) << text.error();
}

}  // namespace
}  // namespace udiag::consumer
