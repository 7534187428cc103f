// Event filters through a real daemon and real producers: the `filter` files
// drop events before they reach a buffer, per instance and per subsystem, a
// bad filter reads back with the kernel's caret and message (and error_log),
// and `udiag trace/record -e EV --filter EXPR` filter what they show.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "integration_util.h"

namespace udiag::integration {
namespace {

class FiltersTest : public PrivateDaemonTest {
 protected:
  void SetUp() override {
    PrivateDaemonTest::SetUp();
    if (HasFatalFailure()) return;
    // hammer_producer registers "<name> u32 seq": the same event.
    ASSERT_EQ(client_->Write("dynamic_events", "u:ftest u32 seq\nu:other u64 value", true), 0);
  }

  int Write(const std::string& path, const std::string& text) { return client_->Write(path, text, false); }

  // Runs hammer_producer for `count` events and waits until `trace_path`
  // shows the last event the filter lets through (seq `last`).
  void Produce(uint32_t count, const std::string& trace_path, uint32_t last) {
    ASSERT_EQ(RunProgram({Bin("hammer_producer"), "ftest", std::to_string(count)}, {.udiag_dir = dir_}), 0);
    EXPECT_TRUE(PollUntil([&] { return SeqsOf(Read(trace_path), "ftest").contains(last); }))
        << Read(trace_path);
  }

  static std::map<uint32_t, int> Expected(std::initializer_list<uint32_t> seqs) {
    std::map<uint32_t, int> out;
    for (uint32_t s : seqs) out[s] = 1;
    return out;
  }
};

TEST_F(FiltersTest, FilterDropsEventsAndReadsBack) {
  EXPECT_EQ(Read("events/user_events/ftest/filter"), "none\n");
  ASSERT_EQ(Write("events/user_events/ftest/filter", "(seq >= 10 && seq < 13) || seq == 0x2a\n"), 0);
  EXPECT_EQ(Read("events/user_events/ftest/filter"), "(seq >= 10 && seq < 13) || seq == 0x2a\n");
  ASSERT_EQ(Write("events/user_events/ftest/enable", "1"), 0);
  Produce(100, "trace", 42);
  EXPECT_EQ(SeqsOf(Read("trace"), "ftest"), Expected({10, 11, 12, 42}));
  // Dropped events are neither entries nor losses.
  EXPECT_NE(Read("trace").find("# entries-in-buffer/entries-written: 4/4 "), std::string::npos) << Read("trace");

  ASSERT_EQ(Write("events/user_events/ftest/filter", "0"), 0);
  EXPECT_EQ(Read("events/user_events/ftest/filter"), "none\n");
  ASSERT_EQ(Write("trace", ""), 0);
  Produce(5, "trace", 4);
  EXPECT_EQ(SeqsOf(Read("trace"), "ftest"), Expected({0, 1, 2, 3, 4}));
}

TEST_F(FiltersTest, BadFilterShowsCaretAndErrorLog) {
  EXPECT_EQ(Write("events/user_events/ftest/filter", "seq > 1 && sqe == 2\n"), EINVAL);
  EXPECT_EQ(Read("events/user_events/ftest/filter"),
            "seq > 1 && sqe == 2\n"
            "               ^\n"
            "parse_error: Field not found\n\n");
  std::string log = Read("error_log");
  EXPECT_NE(log.find("] event filter parse error: error: Field not found\n"
                     "  Command: seq > 1 && sqe == 2\n"
                     "                          ^\n"),
            std::string::npos)
      << log;
  EXPECT_EQ(Write("events/user_events/ftest/filter", "seq == \"1\""), EINVAL);
  EXPECT_EQ(Read("events/user_events/ftest/filter"),
            "seq == \"1\"\n        ^\nparse_error: Expecting numeric field\n\n");
  // Structural errors come back with the kernel's own errno values.
  EXPECT_EQ(Write("events/user_events/ftest/filter", "(seq == 1"), ENOENT);
  EXPECT_EQ(Read("events/user_events/ftest/filter"), "(seq == 1\n^\nparse_error: Too many '('\n\n");
  // The event is unfiltered after a failed write.
  ASSERT_EQ(Write("events/user_events/ftest/enable", "1"), 0);
  Produce(3, "trace", 2);
  EXPECT_EQ(SeqsOf(Read("trace"), "ftest"), Expected({0, 1, 2}));
}

TEST_F(FiltersTest, EachInstanceFiltersItsOwnCopy) {
  ASSERT_EQ(client_->Mkdir("instances/odd"), 0);
  ASSERT_EQ(Write("events/user_events/ftest/enable", "1"), 0);
  ASSERT_EQ(Write("instances/odd/events/user_events/ftest/enable", "1"), 0);
  ASSERT_EQ(Write("events/user_events/ftest/filter", "seq < 3"), 0);
  ASSERT_EQ(Write("instances/odd/events/user_events/ftest/filter", "seq & 1"), 0);
  Produce(8, "instances/odd/trace", 7);
  EXPECT_EQ(SeqsOf(Read("instances/odd/trace"), "ftest"), Expected({1, 3, 5, 7}));
  EXPECT_EQ(SeqsOf(Read("trace"), "ftest"), Expected({0, 1, 2}));
  EXPECT_EQ(Read("instances/odd/events/user_events/ftest/filter"), "seq & 1\n");
  EXPECT_EQ(Read("events/user_events/ftest/filter"), "seq < 3\n");
}

TEST_F(FiltersTest, SubsystemFilterAppliesWhereItParses) {
  // events.rst §5.3 with user events: a common field reaches every event...
  ASSERT_EQ(Write("events/user_events/filter", "common_pid != 0"), 0);
  EXPECT_EQ(Read("events/user_events/ftest/filter"), "common_pid != 0\n");
  EXPECT_EQ(Read("events/user_events/other/filter"), "common_pid != 0\n");
  EXPECT_EQ(Read("events/user_events/filter"),
            "### global filter ###\n# Use this to set filters for multiple events.\n"
            "# Only events with the given fields will be affected.\n"
            "# If no events are modified, an error message will be displayed here\n");
  // ...an event's own field only those that have it.
  ASSERT_EQ(Write("events/user_events/filter", "seq == 3"), 0);
  EXPECT_EQ(Read("events/user_events/ftest/filter"), "seq == 3\n");
  EXPECT_EQ(Read("events/user_events/other/filter"),
            "seq == 3\n^\nparse_error: Couldn't find or set field in one of a subsystem's events\n\n");
  ASSERT_EQ(Write("events/user_events/enable", "1"), 0);
  Produce(6, "trace", 3);
  EXPECT_EQ(SeqsOf(Read("trace"), "ftest"), Expected({3}));
  ASSERT_EQ(Write("events/user_events/filter", "0"), 0);
  EXPECT_EQ(Read("events/user_events/ftest/filter"), "none\n");
  EXPECT_EQ(Read("events/user_events/other/filter"), "none\n");
}

TEST_F(FiltersTest, UdiagTraceFilterAppliesToThePrecedingEvent) {
  TempDir tmp;
  const std::string out = tmp.path() + "/trace.txt", err = tmp.path() + "/err.txt";
  int status = RunProgram({Bin("udiag"), "trace", "-e", "ftest", "--filter", "seq >= 5 && seq <= 6", "--",
                           Bin("hammer_producer"), "ftest", "10"},
                          {.udiag_dir = dir_, .stdout_path = out, .stderr_path = err});
  ASSERT_EQ(status, 0) << ReadFileText(err);
  EXPECT_EQ(SeqsOf(ReadFileText(out), "ftest"), Expected({5, 6})) << ReadFileText(out);
  // Its filter goes with it, as its enable does.
  EXPECT_TRUE(PollUntil([&] { return Read("events/user_events/ftest/filter") == "none\n"; }))
      << "udiag trace left its filter behind: " << Read("events/user_events/ftest/filter");

  // A filter that does not parse for the event: the error_log entry, exit 1.
  status = RunProgram({Bin("udiag"), "trace", "-e", "ftest", "-f", "sqe == 1", "--", "/bin/true"},
                      {.udiag_dir = dir_, .stdout_path = out, .stderr_path = err});
  EXPECT_EQ(status, 1);
  EXPECT_NE(ReadFileText(err).find("event filter parse error: error: Field not found\n  Command: sqe == 1\n"),
            std::string::npos)
      << ReadFileText(err);
  // --filter needs an -e before it.
  EXPECT_EQ(RunProgram({Bin("udiag"), "trace", "--filter", "seq == 1", "--", "/bin/true"},
                       {.udiag_dir = dir_, .stdout_path = out, .stderr_path = err}),
            2);
}

// An auto-enable rule's filter reaches events created later; where it does
// not parse, the event stays off and says why.
TEST_F(FiltersTest, AutoEnableFilterAppliesToLaterEvents) {
  ASSERT_EQ(client_->AutoEnable("late_*", "", "seq == 1"), 0);
  ASSERT_EQ(client_->Write("dynamic_events", "u:late_ok u32 seq\nu:late_bad u64 value", true), 0);
  EXPECT_EQ(Read("events/user_events/late_ok/enable"), "1\n");
  EXPECT_EQ(Read("events/user_events/late_ok/filter"), "seq == 1\n");
  EXPECT_EQ(Read("events/user_events/late_bad/enable"), "0\n");
  EXPECT_EQ(Read("events/user_events/late_bad/filter"), "seq == 1\n    ^\nparse_error: Field not found\n\n");
}

TEST_F(FiltersTest, UdiagRecordFilterAppliesInItsInstance) {
  TempDir tmp;
  const std::string dat = tmp.path() + "/f.dat", err = tmp.path() + "/err.txt", out = tmp.path() + "/report.txt";
  int status = RunProgram({Bin("udiag"), "record", "-e", "other", "-e", "ftest", "--filter", "seq < 2", "-o", dat,
                           "--", Bin("hammer_producer"), "ftest", "10"},
                          {.udiag_dir = dir_, .stderr_path = err});
  ASSERT_EQ(status, 0) << ReadFileText(err);
  ASSERT_EQ(RunProgram({Bin("udiag"), "report", dat}, {.udiag_dir = dir_, .stdout_path = out}), 0);
  EXPECT_EQ(SeqsOf(ReadFileText(out), "ftest"), Expected({0, 1})) << ReadFileText(out);
  // The top instance's filter is untouched.
  EXPECT_EQ(Read("events/user_events/ftest/filter"), "none\n");
}

}  // namespace
}  // namespace udiag::integration
