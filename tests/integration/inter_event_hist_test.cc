// Inter-event histograms through a real daemon and real producers
// (histogram.rst §2.2): one event saves common_timestamp per key in a
// variable, another event's histogram reads it at the same key; onmatch()
// turns each match into a synthetic event that the trace shows and a
// histogram of its own counts; onmax() keeps the largest latency per key.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <sstream>
#include <string>

#include "integration_util.h"

namespace udiag::integration {
namespace {

class InterEventHistTest : public PrivateDaemonTest {
 protected:
  void SetUp() override {
    PrivateDaemonTest::SetUp();
    if (HasFatalFailure()) return;
    // hammer_producer registers "<name> u32 seq" and writes seq 0..count-1.
    ASSERT_EQ(client_->Write("dynamic_events", "u:wakeup_start u32 seq\nu:wakeup_end u32 seq", true), 0);
  }
  int Write(const std::string& path, const std::string& text) { return client_->Write(path, text, true); }
  void Produce(const std::string& event, uint32_t count) {
    ASSERT_EQ(RunProgram({Bin("hammer_producer"), event, std::to_string(count)}, {.udiag_dir = dir_}), 0);
  }
  // seq -> (hitcount, lat) of each entry of a "keys=seq ... vals=$lat" table.
  static std::map<uint32_t, std::pair<uint64_t, uint64_t>> Latencies(const std::string& table) {
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> out;
    std::istringstream lines(table);
    for (std::string line; std::getline(lines, line);) {
      unsigned seq;
      unsigned long long hits, lat;
      if (std::sscanf(line.c_str(), "{ seq: %u } hitcount: %llu lat: %llu", &seq, &hits, &lat) == 3) {
        out[seq] = {hits, lat};
      }
    }
    return out;
  }
};

constexpr uint64_t kHour = 3'600'000'000;  // µs: a latency beyond it is a timestamp gone backwards

TEST_F(InterEventHistTest, VariableReferenceMeasuresLatencyPerKey) {
  ASSERT_EQ(Write("events/user_events/wakeup_start/trigger", "hist:keys=seq:ts0=common_timestamp.usecs"), 0);
  const std::string end_hist = "hist:keys=seq:lat=common_timestamp.usecs-$ts0:vals=$lat";
  ASSERT_EQ(Write("events/user_events/wakeup_end/trigger", end_hist), 0);
  EXPECT_EQ(
      Read("events/user_events/wakeup_end/trigger"),
      "hist:keys=seq:vals=hitcount,$lat:lat=common_timestamp.usecs-$ts0:sort=hitcount:size=2048:clock=mono "
      "[active]\n");
  // Variables are not shown: the start histogram counts, nothing more.
  Produce("wakeup_start", 10);
  EXPECT_NE(Read("events/user_events/wakeup_start/hist").find("{ seq:          9 } hitcount:          1\n"),
            std::string::npos);
  Produce("wakeup_end", 10);
  auto latencies = Latencies(Read("events/user_events/wakeup_end/hist"));
  ASSERT_EQ(latencies.size(), 10u) << Read("events/user_events/wakeup_end/hist");
  for (const auto& [seq, entry] : latencies) {
    EXPECT_EQ(entry.first, 1u) << seq;
    EXPECT_LT(entry.second, kHour) << seq;
  }
  // ts0 was read once per key: ends without a new start are not counted.
  Produce("wakeup_end", 10);
  EXPECT_NE(Read("events/user_events/wakeup_end/hist").find("Totals:\n    Hits: 10\n    Entries: 10\n"),
            std::string::npos);
  // The start histogram is read by the end one: it cannot go first.
  EXPECT_EQ(Write("events/user_events/wakeup_start/trigger", "!hist:keys=seq:ts0=common_timestamp.usecs"),
            EBUSY);
  EXPECT_EQ(Write("events/user_events/wakeup_end/trigger", "!" + end_hist), 0);
  EXPECT_EQ(Write("events/user_events/wakeup_start/trigger", "!hist:keys=seq:ts0=common_timestamp.usecs"), 0);
}

// The kernel's canonical wakeup_latency example, with two user events.
TEST_F(InterEventHistTest, OnmatchTracesSyntheticLatencyEvents) {
  ASSERT_EQ(Write("synthetic_events", "wakeup_latency u64 lat; pid_t pid"), 0);
  EXPECT_EQ(Read("synthetic_events"), "wakeup_latency\tu64 lat; pid_t pid\n");
  ASSERT_EQ(Write("events/user_events/wakeup_start/trigger", "hist:keys=seq:ts0=common_timestamp.usecs"), 0);
  ASSERT_EQ(Write("events/user_events/wakeup_end/trigger",
                  "hist:keys=seq:wakeup_lat=common_timestamp.usecs-$ts0:"
                  "onmatch(user_events.wakeup_start).trace(wakeup_latency,$wakeup_lat,common_pid)"),
            0);
  ASSERT_EQ(Write("events/synthetic/wakeup_latency/trigger", "hist:keys=pid:vals=lat"), 0);
  ASSERT_EQ(Write("events/synthetic/wakeup_latency/enable", "1"), 0);
  EXPECT_EQ(Write("synthetic_events", "!wakeup_latency"), EBUSY);
  Produce("wakeup_start", 20);
  Produce("wakeup_end", 20);
  Produce("wakeup_end", 5);  // no start: no match, no synthetic event
  // One synthetic event per match, in the trace and in its histogram.
  const std::string trace = Read("trace");
  std::vector<uint64_t> lats;
  std::istringstream lines(trace);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find(": wakeup_latency: lat=");
    unsigned long long lat;
    unsigned pid;
    if (at == std::string::npos ||
        std::sscanf(line.c_str() + at, ": wakeup_latency: lat=%llu pid=%u", &lat, &pid) != 2) {
      continue;
    }
    lats.push_back(lat);
    EXPECT_NE(pid, 0u);
  }
  ASSERT_EQ(lats.size(), 20u) << trace;
  for (uint64_t lat : lats) EXPECT_LT(lat, kHour);
  const std::string hist = Read("events/synthetic/wakeup_latency/hist");
  EXPECT_NE(hist.find("# trigger info: hist:keys=pid:vals=hitcount,lat:sort=hitcount:size=2048 [active]\n"),
            std::string::npos);
  EXPECT_NE(hist.find(" } hitcount:         20  lat: "), std::string::npos) << hist;
  EXPECT_NE(hist.find("Totals:\n    Hits: 20\n    Entries: 1\n"), std::string::npos) << hist;
}

TEST_F(InterEventHistTest, OnmaxSavesTheLargestLatencyPerKey) {
  ASSERT_EQ(Write("events/user_events/wakeup_start/trigger", "hist:keys=seq:ts0=common_timestamp.usecs"), 0);
  ASSERT_EQ(Write("events/user_events/wakeup_end/trigger",
                  "hist:keys=seq:lat=common_timestamp.usecs-$ts0:onmax($lat).save(seq,common_pid)"),
            0);
  Produce("wakeup_start", 3);
  Produce("wakeup_end", 3);
  const std::string hist = Read("events/user_events/wakeup_end/hist");
  int entries = 0;
  for (size_t at = hist.find("{ seq:"); at != std::string::npos; at = hist.find("{ seq:", at + 1)) {
    // An entry and, on the next line, what onmax saved with it.
    unsigned seq, saved_seq, pid;
    unsigned long long max;
    if (std::sscanf(hist.c_str() + at, "{ seq: %u } hitcount: 1\n\tmax: %llu seq: %u common_pid: %u", &seq,
                    &max, &saved_seq, &pid) != 4) {
      continue;
    }
    ++entries;
    EXPECT_EQ(seq, saved_seq);  // saved from the event that made the max
    EXPECT_LT(max, kHour);
  }
  EXPECT_EQ(entries, 3) << hist;
}

// name=: both events count into one table, which each event's hist file shows.
TEST_F(InterEventHistTest, NamedHistogramIsSharedByTwoEvents) {
  ASSERT_EQ(Write("events/user_events/wakeup_start/trigger", "hist:name=both:keys=seq.buckets=10"), 0);
  ASSERT_EQ(Write("events/user_events/wakeup_end/trigger", "hist:name=both:keys=seq.buckets=10 if seq < 10"),
            0);
  Produce("wakeup_start", 20);
  Produce("wakeup_end", 20);
  const std::string table =
      "{ seq: ~ 10-19 } hitcount:         10\n{ seq: ~ 0-9 } hitcount:         20\n\n"
      "Totals:\n    Hits: 30\n    Entries: 2\n    Dropped: 0\n";
  EXPECT_EQ(Read("events/user_events/wakeup_start/hist"),
            "# event histogram\n#\n"
            "# trigger info: hist:name=both:keys=seq.buckets=10:vals=hitcount:sort=hitcount:size=2048 "
            "[active]\n#\n\n" +
                table);
  EXPECT_EQ(
      Read("events/user_events/wakeup_end/hist"),
      "# event histogram\n#\n"
      "# trigger info: hist:name=both:keys=seq.buckets=10:vals=hitcount:sort=hitcount:size=2048 if seq < 10 "
      "[active]\n#\n\n" +
          table);
}

// A hist command that fails tells why in error_log, as the kernel's hist_err().
TEST_F(InterEventHistTest, ErrorsGoToErrorLogWithACaret) {
  const std::string command = "hist:keys=seq:lat=common_timestamp.usecs-$nosuch";
  EXPECT_EQ(Write("events/user_events/wakeup_end/trigger", command), EINVAL);
  EXPECT_EQ(Write("events/user_events/wakeup_end/trigger",
                  "hist:keys=seq:onmatch(user_events.wakeup_start).trace(nosynth,seq)"),
            EINVAL);
  const std::string log = Read("error_log");
  const std::string first =
      "] hist:user_events:wakeup_end: error: Couldn't find variable\n  Command: " + command + "\n" +
      std::string(11 + command.find("$nosuch"), ' ') + "^\n";
  EXPECT_NE(log.find(first), std::string::npos) << log;
  EXPECT_NE(log.find("] hist:user_events:wakeup_end: error: Couldn't find synthetic event\n"),
            std::string::npos)
      << log;
}

}  // namespace
}  // namespace udiag::integration
