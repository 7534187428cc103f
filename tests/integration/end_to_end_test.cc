// (a) End to end: a consumer auto-enables user_events:*, the typed C++
// example runs as a real producer process, and trace, user_events_status and
// format show what it wrote with the kernel's text formats.
#include <gtest/gtest.h>

#include "consumer/private_daemon.h"
#include "integration_util.h"

namespace udiag::integration {
namespace {

class EndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    daemon_ = consumer::PrivateDaemon::Start(&error);
    ASSERT_NE(daemon_, nullptr) << error;
  }
  std::unique_ptr<consumer::PrivateDaemon> daemon_;
};

TEST_F(EndToEndTest, ExampleCppEventsReachTraceStatusAndFormat) {
  auto consumer = MustConnect(daemon_->dir());
  ASSERT_EQ(consumer.AutoEnable("user_events:*"), 0);
  ASSERT_EQ(RunProgram({Bin("example_cpp")}, {.udiag_dir = daemon_->dir()}), 0);

  std::string trace;
  ASSERT_TRUE(PollUntil([&] {
    trace = ReadTree(daemon_->dir(), "trace");
    return trace.find("path=/items/4") != std::string::npos && trace.find("bytes=de,ad,04") != std::string::npos;
  })) << trace;
  EXPECT_NE(trace.find("http_request: status=0xc8 (200) latency_ns=0x5dc (1500) path=/items/0\n"), std::string::npos)
      << trace;
  EXPECT_NE(trace.find("packet: kind='A'(65) bytes=de,ad,00\n"), std::string::npos) << trace;
  EXPECT_NE(trace.find("http_request: status=0x194 (404) latency_ns=0x5e6 (1510) path=/items/1\n"), std::string::npos)
      << trace;
  EXPECT_NE(trace.find("packet: kind='E'(69) bytes=de,ad,04\n"), std::string::npos) << trace;
  EXPECT_NE(trace.find("entries-in-buffer/entries-written: 10/10"), std::string::npos) << trace;
  EXPECT_NE(trace.find("example_cpp-"), std::string::npos) << "comm-pid column missing:\n" << trace;

  // Both events stay while the consumer's auto-enable holds them (busy).
  auto status = consumer.Read("user_events_status");
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(*status, "http_request # Used by ftrace\npacket # Used by ftrace\n\nActive: 2\nBusy: 2\n");

  auto id = consumer.Read("events/user_events/http_request/id");
  ASSERT_TRUE(id.ok()) << id.error();
  auto format = consumer.Read("events/user_events/http_request/format");
  ASSERT_TRUE(format.ok()) << format.error();
  EXPECT_EQ(format->rfind("name: http_request\nID: " + *id + "format:\n", 0), 0u) << *format;
  EXPECT_NE(format->find("\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"), std::string::npos);
  EXPECT_NE(format->find("\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
                         "\tfield:u32 status;\toffset:8;\tsize:4;\tsigned:0;\n"
                         "\tfield:s64 latency_ns;\toffset:12;\tsize:8;\tsigned:1;\n"
                         // As the kernel's f_show: a __rel_loc array moves [] after the name.
                         "\tfield:__rel_loc char path[];\toffset:20;\tsize:4;\tsigned:1;\n\n"
                         "print fmt: \"status=%u latency_ns=%lld path=%s\", REC->status, REC->latency_ns, "
                         "__get_rel_str(path)\n"),
            std::string::npos)
      << *format;

  auto enable = consumer.Read("events/user_events/packet/enable");
  ASSERT_TRUE(enable.ok());
  EXPECT_EQ(*enable, "1\n");
  auto available = consumer.Read("available_events");
  ASSERT_TRUE(available.ok());
  EXPECT_EQ(*available, "user_events:http_request\nuser_events:packet\n");
}

TEST_F(EndToEndTest, EnableThroughTheTreeThenExampleC) {
  // Enable via the tree: the event must exist first, so create it through
  // dynamic_events with the same fields example_c registers.
  auto consumer = MustConnect(daemon_->dir());
  ASSERT_EQ(consumer.Write("dynamic_events", "u:example_c u32 count; __rel_loc char[] message", true), 0);
  ASSERT_EQ(consumer.Write("events/user_events/example_c/enable", "1", false), 0);
  ASSERT_EQ(RunProgram({Bin("example_c"), "3"}, {.udiag_dir = daemon_->dir()}), 0);
  std::string trace;
  ASSERT_TRUE(PollUntil([&] {
    trace = ReadTree(daemon_->dir(), "trace");
    return trace.find("message=hello #2") != std::string::npos;
  })) << trace;
  EXPECT_NE(trace.find("example_c: count=0x0 (0) message=hello #0\n"), std::string::npos) << trace;
  EXPECT_NE(trace.find("example_c: count=0x1 (1) message=hello #1\n"), std::string::npos) << trace;
  // Clearing the trace with a truncating write empties it.
  ASSERT_EQ(consumer.Write("trace", "", false), 0);
  auto cleared = consumer.Read("trace");
  ASSERT_TRUE(cleared.ok());
  EXPECT_EQ(cleared->find("example_c:"), std::string::npos) << *cleared;
}

}  // namespace
}  // namespace udiag::integration
