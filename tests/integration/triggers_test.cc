// Event triggers through a real daemon and real producers: traceoff with a
// count and a filter stops the trace at the matching event, enable_event
// turns a soft-disabled event on mid-stream, and the files read back as the
// kernel prints them.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "integration_util.h"

namespace udiag::integration {
namespace {

class TriggersTest : public PrivateDaemonTest {
 protected:
  void SetUp() override {
    PrivateDaemonTest::SetUp();
    if (HasFatalFailure()) return;
    // hammer_producer registers "<name> u32 seq" and writes seq 0..count-1.
    ASSERT_EQ(client_->Write("dynamic_events", "u:ttest u32 seq", true), 0);
  }

  int Write(const std::string& path, const std::string& text) { return client_->Write(path, text, true); }
  void Produce(uint32_t count) {
    ASSERT_EQ(RunProgram({Bin("hammer_producer"), "ttest", std::to_string(count)}, {.udiag_dir = dir_}), 0);
  }
  // What udiag printed, without the line hammer_producer adds to the same stdout.
  static std::string UdiagOutput(const std::string& path) {
    std::string text = ReadFileText(path);
    if (size_t at = text.find("enabled\n"); at != std::string::npos) text.erase(at, 8);
    return text;
  }
  static std::map<uint32_t, int> Range(uint32_t first, uint32_t end) {
    std::map<uint32_t, int> out;
    for (uint32_t s = first; s < end; ++s) out[s] = 1;
    return out;
  }
};

TEST_F(TriggersTest, TraceoffWithCountAndFilterStopsAtTheMatch) {
  ASSERT_EQ(Write("events/user_events/ttest/enable", "1"), 0);
  ASSERT_EQ(Write("events/user_events/ttest/trigger", "traceoff:1 if seq > 49\n"), 0);
  EXPECT_EQ(Read("events/user_events/ttest/trigger"), "traceoff:count=1 if seq > 49\n");
  EXPECT_EQ(Read("events/user_events/ttest/enable"), "1*\n");
  Produce(100);
  // Reading drains every ring first, so the whole run has been seen.
  EXPECT_EQ(SeqsOf(Read("trace"), "ttest"), Range(0, 50));
  EXPECT_EQ(Read("tracing_on"), "0\n");
  EXPECT_EQ(Read("events/user_events/ttest/trigger"), "traceoff:count=0 if seq > 49\n");
  EXPECT_EQ(Write("events/user_events/ttest/trigger", "traceon"), EEXIST);
  EXPECT_EQ(Write("events/user_events/ttest/trigger", "tracoff"), EINVAL);
  ASSERT_EQ(Write("events/user_events/ttest/trigger", "!traceoff"), 0);
  EXPECT_EQ(Read("events/user_events/ttest/enable"), "1\n");
}

TEST_F(TriggersTest, EnableEventTurnsASoftDisabledEventOnInAnInstance) {
  ASSERT_EQ(client_->Mkdir("instances/late"), 0);
  const std::string trigger = "instances/late/events/user_events/ttest/trigger";
  ASSERT_EQ(Write(trigger, "enable_event:user_events:ttest:1 if seq == 90"), 0);
  EXPECT_EQ(Read("instances/late/events/user_events/ttest/enable"), "0*\n");
  EXPECT_EQ(Read("user_events_status"), "ttest # Used by ftrace\n\nActive: 1\nBusy: 1\n");
  Produce(100);
  EXPECT_EQ(SeqsOf(Read("instances/late/trace"), "ttest"), Range(90, 100));
  EXPECT_EQ(Read("instances/late/events/user_events/ttest/enable"), "1*\n");
  EXPECT_EQ(Read(trigger), "enable_event:user_events:ttest:count=0 if seq == 90\n");
  EXPECT_EQ(SeqsOf(Read("trace"), "ttest"), Range(0, 0));  // the top instance enables nothing
}

TEST_F(TriggersTest, HistAggregatesEveryProducersEvents) {
  ASSERT_EQ(client_->Write("events/user_events/ttest/trigger", "hist:keys=seq.buckets=25:sort=seq if seq < 90", false), 0);
  Produce(100);
  Produce(100);
  EXPECT_EQ(Read("events/user_events/ttest/hist"),
            "# event histogram\n#\n"
            "# trigger info: hist:keys=seq.buckets=25:vals=hitcount:sort=seq.buckets=25:size=2048 if seq < 90 [active]\n"
            "#\n\n"
            "{ seq: ~ 0-24 } hitcount:         50\n"
            "{ seq: ~ 25-49 } hitcount:         50\n"
            "{ seq: ~ 50-74 } hitcount:         50\n"
            "{ seq: ~ 75-99 } hitcount:         30\n"
            "\nTotals:\n    Hits: 180\n    Entries: 4\n    Dropped: 0\n");
  // The event was never enabled: it fired for the histogram only.
  EXPECT_EQ(Read("events/user_events/ttest/enable"), "0*\n");
  EXPECT_EQ(SeqsOf(Read("trace"), "ttest"), Range(0, 0));
}

TEST_F(TriggersTest, UdiagHistPrintsTheTableWhenTheCommandEnds) {
  TempDir tmp;
  const std::string out = tmp.path() + "/hist.txt", err = tmp.path() + "/err.txt";
  int status = RunProgram({Bin("udiag"), "hist", "-e", "user_events:ttest", "-k", "seq.buckets=50", "-v", "seq",
                           "--filter", "seq >= 20", "--", Bin("hammer_producer"), "ttest", "100"},
                          {.udiag_dir = dir_, .stdout_path = out, .stderr_path = err});
  ASSERT_EQ(status, 0) << ReadFileText(err);
  EXPECT_EQ(UdiagOutput(out),
            "# event histogram\n#\n"
            "# trigger info: hist:keys=seq.buckets=50:vals=hitcount,seq:sort=hitcount:size=2048 if seq >= 20 [active]\n"
            "#\n\n"
            "{ seq: ~ 0-49 } hitcount:         30  seq:       1035\n"
            "{ seq: ~ 50-99 } hitcount:         50  seq:       3725\n"
            "\nTotals:\n    Hits: 80\n    Entries: 2\n    Dropped: 0\n");
  // Its instance went with it.
  EXPECT_EQ(Read("user_events_status"), "ttest\n\nActive: 1\nBusy: 0\n");

  status = RunProgram({Bin("udiag"), "hist", "-e", "ttest", "-k", "seq.bogus", "--", "true"},
                      {.udiag_dir = dir_, .stderr_path = err});
  EXPECT_EQ(status, 1);
  EXPECT_NE(ReadFileText(err).find("EINVAL"), std::string::npos) << ReadFileText(err);
}

// An event the command registers as it starts and writes at once (it does
// not wait to be enabled): the daemon sets the histogram before the
// registration returns, so every event counts.
TEST_F(TriggersTest, UdiagHistCountsAnEventTheCommandRegisters) {
  TempDir tmp;
  const std::string out = tmp.path() + "/hist.txt", err = tmp.path() + "/err.txt";
  int status = RunProgram({Bin("udiag"), "hist", "-e", "http_request", "-k", "status", "--", Bin("example_cpp"), "30"},
                          {.udiag_dir = dir_, .stdout_path = out, .stderr_path = err});
  ASSERT_EQ(status, 0) << ReadFileText(err);
  std::string table = ReadFileText(out);
  EXPECT_NE(table.find("{ status:        200 } hitcount:         15\n"), std::string::npos) << table;
  EXPECT_NE(table.find("{ status:        404 } hitcount:         15\n"), std::string::npos) << table;
  EXPECT_NE(table.find("    Hits: 30\n"), std::string::npos) << table;
}

TEST_F(TriggersTest, UdiagHistJson) {
  TempDir tmp;
  const std::string out = tmp.path() + "/hist.json";
  ASSERT_EQ(RunProgram({Bin("udiag"), "hist", "-e", "ttest", "-k", "seq.log2", "--sort", "seq", "--json", "--",
                        Bin("hammer_producer"), "ttest", "4"},
                       {.udiag_dir = dir_, .stdout_path = out}),
            0);
  EXPECT_EQ(UdiagOutput(out),
            "[{\"trigger\": \"hist:keys=seq.log2:vals=hitcount:sort=seq.log2:size=2048 [active]\", \"entries\": "
            "[{\"seq\": \"~ 2^0\", \"hitcount\": 2}, {\"seq\": \"~ 2^1\", \"hitcount\": 1}, "
            "{\"seq\": \"~ 2^2\", \"hitcount\": 1}], \"totals\": {\"hits\": 4, \"entries\": 3, \"dropped\": 0}}]\n");
}

}  // namespace
}  // namespace udiag::integration
