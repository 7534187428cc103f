// Files from OpenTraceDatWriter, checked with the real trace-cmd: report
// (against golden text), dump -v, --check-events, --ts-check, lost-event
// notices, the clock, and merging with a real kernel trace (testdata/).
#include <fstream>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "record/tracedat/test_trace.h"
#include "record/tracedat/tracedat_writer.h"

namespace udiag::record::tracedat {
namespace {

using testing::RunCommand;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class TraceCmdTest : public ::testing::Test {
 protected:
  // Writes the sample trace starting at `base_ns` and returns its path.
  std::string WriteSample(const std::string& name, uint64_t base_ns, bool with_loss) {
    std::string path = dir_ + "/" + name;
    base::ErrorOr<std::unique_ptr<TraceWriter>> writer = OpenTraceDatWriter(path);
    EXPECT_TRUE(writer.ok()) << writer.error();
    if (!writer.ok()) return path;
    EXPECT_EQ(testing::WriteTrace(**writer, testing::MakeSampleTrace(base_ns, with_loss)), 0);
    return path;
  }

  std::string Run(const std::string& command, int expected_status = 0) {
    int status = -1;
    std::string output = RunCommand(command, &status);
    EXPECT_EQ(status, expected_status) << command << "\n" << output;
    return output;
  }

  testing::TempDir temp_;
  const std::string& dir_ = temp_.path();
};

TEST_F(TraceCmdTest, ReportPrintsEveryFieldAsTheGoldenText) {
  std::string file = WriteSample("sample.dat", 1000000000000ull, /*with_loss=*/true);
  std::string report = Run("trace-cmd report -N -t " + file);
  EXPECT_EQ(report.find("FAILED TO PARSE"), std::string::npos);
  EXPECT_EQ(report, ReadFile(TRACEDAT_TESTDATA_DIR "/golden_report.txt"));
  // -R ignores print fmt and prints each field by its type.
  std::string raw = Run("trace-cmd report -N -t -R " + file);
  EXPECT_EQ(raw.find("FAILED TO PARSE"), std::string::npos);
  EXPECT_EQ(raw, ReadFile(TRACEDAT_TESTDATA_DIR "/golden_report_raw.txt"));
}

TEST_F(TraceCmdTest, DumpCheckEventsAndTimestampCheckPass) {
  std::string file = WriteSample("sample.dat", 1000000000000ull, true);
  EXPECT_NE(Run("trace-cmd dump -v " + file).find("is a valid trace-cmd file"), std::string::npos);
  Run("trace-cmd report --check-events " + file);
  Run("trace-cmd report --ts-check " + file);
  EXPECT_NE(Run("trace-cmd dump --clock " + file).find("[mono]"), std::string::npos);
  // Both systems and every event are stored.
  std::string events = Run("trace-cmd report --events " + file);
  EXPECT_NE(events.find("system: user_events\n"), std::string::npos);
  EXPECT_NE(events.find("system: user_events_multi\n"), std::string::npos);
  EXPECT_NE(events.find("name: multi_20\n"), std::string::npos);
}

TEST_F(TraceCmdTest, LossIsReportedRightBeforeTheRecordItPrecedes) {
  std::vector<std::string> lines = Lines(Run("trace-cmd report -N " + WriteSample("l.dat", 1000000000000ull, true)));
  size_t notices = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find("EVENTS DROPPED") == std::string::npos) continue;
    ++notices;
    EXPECT_EQ(lines[i], "CPU:1 [5 EVENTS DROPPED]");
    ASSERT_LT(i + 1, lines.size());
    EXPECT_NE(lines[i + 1].find("writer-aux-101   [001]  1000.000005: big:"), std::string::npos) << lines[i + 1];
  }
  EXPECT_EQ(notices, 1u);
  std::string clean = Run("trace-cmd report -N " + WriteSample("c.dat", 1000000000000ull, false));
  EXPECT_EQ(clean.find("DROPPED"), std::string::npos);
}

TEST_F(TraceCmdTest, ManyPagesReportEveryRecord) {
  std::string path = dir_ + "/many.dat";
  base::ErrorOr<std::unique_ptr<TraceWriter>> writer = OpenTraceDatWriter(path);
  ASSERT_TRUE(writer.ok());
  EventType type = testing::MakeEventType(7, "user_events", "tick u32 n;char[60] pad");
  (*writer)->AddEventType(type);
  (*writer)->AddTask({9, 9, "ticker"});
  constexpr uint32_t kRecords = 3000;  // ~60 pages per cpu
  for (uint32_t n = 0; n < kRecords; ++n) {
    std::vector<uint8_t> bytes = testing::RecordBytes(type, 9).Int("n", n).Fixed("pad", "p").bytes();
    // Gaps from 1 us to 0.3 s, so some deltas need time extends.
    uint64_t ts = 5000000000ull + uint64_t{n} * 1000 + (n % 500 == 0 ? uint64_t{n} * 300000 : 0);
    (*writer)->Write({ts, 9, 9, static_cast<uint16_t>(n % 2), 7, 0, bytes});
  }
  ASSERT_EQ((*writer)->Finish({}), 0);
  std::string report = Run("trace-cmd report -N " + path);
  EXPECT_EQ(Lines(report).size(), kRecords + 1);  // plus "cpus=2"
  EXPECT_NE(report.find("tick:                 n=2999 pad=p"), std::string::npos);
  Run("trace-cmd report --ts-check " + path);
}

// "[src:] comm-pid [cpu] seconds: ..." -> seconds as ns, from -t output.
uint64_t TimestampOf(const std::string& line) {
  size_t colon = line.find(": ", line.find(']'));
  size_t start = line.rfind(' ', colon - 1) + 1;
  std::string text = line.substr(start, colon - start);
  size_t dot = text.find('.');
  return std::stoull(text.substr(0, dot)) * 1000000000ull + std::stoull(text.substr(dot + 1));
}

TEST_F(TraceCmdTest, MergesWithAKernelTraceInTimeOrder) {
  // The kernel trace's exec events lie in 12838.206606..12838.259776 s
  // (mono); ours start at 12838.207000 and end 200 ms later.
  std::string ours = WriteSample("ours.dat", 12838207000000ull, false);
  std::string kernel = TRACEDAT_TESTDATA_DIR "/kernel_mono.dat";
  std::vector<std::string> lines = Lines(Run("trace-cmd report -N -t -i " + kernel + " -i " + ours));
  std::vector<std::string> sources;
  uint64_t previous = 0;
  for (const std::string& line : lines) {
    if (line.find("cpus=") != std::string::npos || line.find("DROPPED") != std::string::npos) continue;
    uint64_t ts = TimestampOf(line);
    EXPECT_GE(ts, previous) << line;
    previous = ts;
    sources.push_back(line.find("sched_process_exec") != std::string::npos ? "k" : "u");
  }
  ASSERT_EQ(sources.size(), 15u + 8u);
  // kernel exec at .206606, our six records at .207000-.207005, the kernel's
  // next exec at .208422, ..., the kernel's last at .259776, our last two.
  std::string order;
  for (const std::string& source : sources) order += source;
  EXPECT_EQ(order, "kuuuuuu" + std::string(14, 'k') + "uu");
  ASSERT_GT(lines.size(), 2u);
  EXPECT_NE(lines[2].find("true-11775 [001] 12838.206606345: sched_process_exec:"), std::string::npos)
      << lines[2];
}

}  // namespace
}  // namespace udiag::record::tracedat
