// (b) trace_pipe streaming delivers every event of a producer exactly once.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "consumer/private_daemon.h"
#include "integration_util.h"

namespace udiag::integration {
namespace {

TEST(TracePipeTest, StreamsEveryEventOfAProducer) {
  std::string error;
  auto daemon = consumer::PrivateDaemon::Start(&error);
  ASSERT_NE(daemon, nullptr) << error;
  auto enabler = MustConnect(daemon->dir());
  ASSERT_EQ(enabler.AutoEnable("piped"), 0);

  auto streamer = MustConnect(daemon->dir());
  std::atomic<bool> stop{false};
  std::string text;
  int stream_result = -1;
  std::thread reader([&] {
    stream_result = streamer.StreamPipe(
        "trace_pipe",
        [&](std::string_view chunk) {
          text.append(chunk);
          return true;
        },
        &stop, 500ms);
  });
  std::this_thread::sleep_for(100ms);  // let the pipe request reach the daemon

  constexpr uint32_t kCount = 2000;
  int status = RunProgram({Bin("hammer_producer"), "piped", std::to_string(kCount), "200"}, {.udiag_dir = daemon->dir()});
  // The producer has exited; StreamPipe keeps draining until 500 ms pass
  // without new text, so events still in its ring are not lost.
  std::this_thread::sleep_for(300ms);
  stop = true;
  reader.join();
  ASSERT_EQ(status, 0);
  EXPECT_EQ(stream_result, 0);

  auto seqs = SeqsOf(text, "piped");
  EXPECT_EQ(CheckExactlyOnce(seqs, kCount), "");
  EXPECT_EQ(text.find("LOST"), std::string::npos) << "events were lost at a low rate";
}

// At full speed events may be dropped, but never silently: every seq of the
// producer is either streamed or counted in a LOST line.
TEST(TracePipeTest, FullSpeedProducerEventsAreStreamedOrReportedLost) {
  std::string error;
  auto daemon = consumer::PrivateDaemon::Start(&error);
  ASSERT_NE(daemon, nullptr) << error;
  auto enabler = MustConnect(daemon->dir());
  ASSERT_EQ(enabler.AutoEnable("fast"), 0);
  auto streamer = MustConnect(daemon->dir());
  std::atomic<bool> stop{false};
  std::string text;
  std::thread reader([&] {
    streamer.StreamPipe(
        "trace_pipe",
        [&](std::string_view chunk) {
          text.append(chunk);
          return true;
        },
        &stop, 1000ms);
  });
  std::this_thread::sleep_for(100ms);
  constexpr uint32_t kCount = 20000;
  int status = RunProgram({Bin("hammer_producer"), "fast", std::to_string(kCount)}, {.udiag_dir = daemon->dir()});
  std::this_thread::sleep_for(500ms);
  stop = true;
  reader.join();
  ASSERT_EQ(status, 0);
  auto seqs = SeqsOf(text, "fast");
  uint64_t lost = LostCount(text);
  EXPECT_EQ(seqs.size() + lost, kCount) << seqs.size() << " streamed, " << lost << " reported lost; last seq "
                                        << (seqs.empty() ? -1 : static_cast<long>(seqs.rbegin()->first));
  // trace_pipe consumes: what it did not stream must not sit unread in `trace`.
  auto trace = enabler.Read("trace");
  ASSERT_TRUE(trace.ok());
  auto unread = SeqsOf(*trace, "fast");
  EXPECT_TRUE(unread.empty()) << unread.size() << " events left in the buffer, first " << unread.begin()->first
                              << "\n" << trace->substr(0, 400);
}

}  // namespace
}  // namespace udiag::integration
