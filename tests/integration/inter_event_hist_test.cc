// Inter-event histograms through a real daemon and real producers
// (histogram.rst §2.2): one event saves common_timestamp per key in a
// variable, another event's histogram reads it at the same key and sums the
// latency.
#include <gtest/gtest.h>

#include <cerrno>
#include <regex>
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
    static const std::regex kLine(R"(\{ seq: +(\d+) \} hitcount: +(\d+)  lat: +(\d+)\n)");
    for (std::sregex_iterator it(table.begin(), table.end(), kLine), end; it != end; ++it) {
      out[std::stoul((*it)[1])] = {std::stoull((*it)[2]), std::stoull((*it)[3])};
    }
    return out;
  }
};

constexpr uint64_t kHour = 3'600'000'000;  // µs: a latency beyond it is a timestamp gone backwards

TEST_F(InterEventHistTest, VariableReferenceMeasuresLatencyPerKey) {
  ASSERT_EQ(Write("events/user_events/wakeup_start/trigger", "hist:keys=seq:ts0=common_timestamp.usecs"), 0);
  const std::string end_hist = "hist:keys=seq:lat=common_timestamp.usecs-$ts0:vals=$lat";
  ASSERT_EQ(Write("events/user_events/wakeup_end/trigger", end_hist), 0);
  EXPECT_EQ(Read("events/user_events/wakeup_end/trigger"),
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
  EXPECT_EQ(Write("events/user_events/wakeup_start/trigger", "!hist:keys=seq:ts0=common_timestamp.usecs"), EBUSY);
  EXPECT_EQ(Write("events/user_events/wakeup_end/trigger", "!" + end_hist), 0);
  EXPECT_EQ(Write("events/user_events/wakeup_start/trigger", "!hist:keys=seq:ts0=common_timestamp.usecs"), 0);
}

}  // namespace
}  // namespace udiag::integration
