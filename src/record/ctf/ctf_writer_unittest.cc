// The writer checked with the real readers: babeltrace2's text output
// against a golden file, python3-bt2 for field classes, values and
// discarded-event counts, and babeltrace2 rejecting a corrupted stream.

#include "record/ctf/ctf_writer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>

#include "record/ctf/ctf_layout.h"
#include "record/ctf/ctf_reader.h"
#include "record/ctf/sample_trace.h"
#include "record/ctf/test_support.h"

namespace udiag::record::ctf {
namespace {

const std::string kTestData = UDIAG_CTF_TESTDATA;

// Writes the sample trace into `dir` (created by the writer).
void WriteSample(const std::string& dir) {
  auto writer = OpenCtfWriter(dir);
  ASSERT_TRUE(writer.ok()) << strerror(writer.error());
  ASSERT_EQ(WriteSampleTrace(MakeSampleTrace(), writer->get()), 0);
}

TEST(CtfWriterTest, AcceptsAnEmptyDirectoryAndRefusesAFullOne) {
  ScratchDir scratch;
  EXPECT_TRUE(OpenCtfWriter(scratch.path()).ok());
  std::ofstream(scratch.path() + "/leftover") << "x";
  auto refused = OpenCtfWriter(scratch.path());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(), EEXIST);
  auto no_parent = OpenCtfWriter(scratch.path() + "/missing/trace");
  ASSERT_FALSE(no_parent.ok());
  EXPECT_EQ(no_parent.error(), ENOENT);
}

TEST(CtfWriterTest, WritesMetadataAndOneStreamPerCpu) {
  ScratchDir scratch;
  std::string dir = scratch.path() + "/trace";
  WriteSample(dir);
  EXPECT_TRUE(ReadFileText(dir + "/metadata").starts_with("/* CTF 1.8 */\n"));
  struct stat st;
  for (const char* name : {"stream_0", "stream_1", "stream_2"}) {
    EXPECT_EQ(stat((dir + "/" + name).c_str(), &st), 0) << name;
  }
}

TEST(CtfWriterTest, Babeltrace2PrintsEveryFieldAsTheGoldenText) {
  ScratchDir scratch;
  std::string dir = scratch.path() + "/trace";
  WriteSample(dir);
  CommandResult result = RunCommand({"babeltrace2", "--clock-cycles", "--no-delta", dir});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, ReadFileText(kTestData + "/sample_trace.txt"));
}

// Many packets per stream: babeltrace2 sees every event and every loss.
TEST(CtfWriterTest, Babeltrace2CountsEveryEventAndLossOfALargeTrace) {
  ScratchDir scratch;
  std::string dir = scratch.path() + "/trace";
  auto writer = OpenCtfWriter(dir);
  ASSERT_TRUE(writer.ok());
  SampleTrace trace = MakeLargeTrace();
  ASSERT_EQ(WriteSampleTrace(trace, writer->get()), 0);
  // step=+0: only the final counts, no running totals.
  CommandResult result = RunCommand({"babeltrace2", dir, "-c", "sink.utils.counter", "-p", "step=+0"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find(fmt::format("{} Event messages", kLargeTraceRecords)), std::string::npos)
      << result.out;
  // One message per loss, and one for the losses at the end.
  EXPECT_NE(result.out.find(fmt::format("{} Discarded event messages", kLargeTraceLosses + 1)),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find(" 0 Discarded packet messages"), std::string::npos) << result.out;
}

TEST(CtfWriterTest, PythonBt2SeesTypedFieldsValuesAndLosses) {
  ScratchDir scratch;
  std::string dir = scratch.path() + "/trace";
  WriteSample(dir);
  CommandResult result = RunCommand({"/usr/bin/python3", kTestData + "/check_sample_trace.py", dir});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("sample trace OK"), std::string::npos) << result.out;
}

// Flips the magic number of the first packet of stream_1.
TEST(CtfWriterTest, Babeltrace2RejectsACorruptedStream) {
  ScratchDir scratch;
  std::string dir = scratch.path() + "/trace";
  WriteSample(dir);
  ASSERT_EQ(RunCommand({"babeltrace2", dir}).exit_code, 0);
  std::fstream stream(dir + "/stream_1", std::ios::in | std::ios::out | std::ios::binary);
  stream.seekp(kMagicAt);
  stream.put('\x00');
  stream.close();
  CommandResult result = RunCommand({"babeltrace2", dir});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("magic"), std::string::npos) << result.err;
}

// Records that go back in time on one CPU (a broken caller): babeltrace2
// refuses the stream, and so does our reader.
TEST(CtfWriterTest, Babeltrace2RejectsAStreamGoingBackInTime) {
  ScratchDir scratch;
  std::string dir = scratch.path() + "/trace";
  SampleTrace trace = MakeSampleTrace();
  std::swap(trace.records[1].record.timestamp, trace.records[2].record.timestamp);  // both CPU 0
  auto writer = OpenCtfWriter(dir);
  ASSERT_TRUE(writer.ok());
  ASSERT_EQ(WriteSampleTrace(trace, writer->get()), 0);
  CommandResult result = RunCommand({"babeltrace2", dir});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("less than"), std::string::npos) << result.err;
  EXPECT_EQ(OpenCtfReader(dir).error(), EINVAL);
}

}  // namespace
}  // namespace udiag::record::ctf
