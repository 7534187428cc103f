// A CTF recording killed half-way: babeltrace2 reads every event up to the
// last checkpoint as the trace is, and CutTornPackets makes a stream whose
// last packet was torn readable again.

#include "record/ctf/ctf_recover.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "record/ctf/ctf_writer.h"
#include "record/ctf/sample_trace.h"
#include "record/ctf/test_support.h"

namespace udiag::record::ctf {
namespace {

// The number of events babeltrace2 counts in `dir`, or -1 if it fails.
int CountedEvents(const std::string& dir) {
  CommandResult result = RunCommand({"babeltrace2", dir, "-c", "sink.utils.counter", "-p", "step=+0"});
  if (result.exit_code != 0) return -1;
  size_t at = result.out.find(" Event messages");
  if (at == std::string::npos) return -1;
  size_t start = result.out.rfind('\n', at);
  return std::atoi(result.out.c_str() + (start == std::string::npos ? 0 : start + 1));
}

// Writes the large trace's records up to `written`, checkpointing before
// each record numbered in `checkpoints`, and drops the writer without
// Finish, as a kill would.
void RecordAndDie(const std::string& dir, std::vector<int> checkpoints, int written) {
  SampleTrace trace = MakeLargeTrace();
  auto writer = OpenCtfWriter(dir);
  ASSERT_TRUE(writer.ok());
  for (const EventType& type : trace.types) (*writer)->AddEventType(type);
  for (const Task& task : trace.tasks) (*writer)->AddTask(task);
  for (int i = 0; i < written; ++i) {
    if (std::find(checkpoints.begin(), checkpoints.end(), i) != checkpoints.end()) {
      ASSERT_EQ((*writer)->Checkpoint(trace.info), 0);
    }
    (*writer)->Write(trace.records[i].record);
  }
}

TEST(CtfRecoverTest, KilledRecordingIsReadableUpToItsCheckpoint) {
  ScratchDir scratch;
  std::string dir = scratch.path() + "/trace";
  RecordAndDie(dir, {5000}, 5001);
  EXPECT_EQ(CountedEvents(dir), 5000);
}

TEST(CtfRecoverTest, TornLastPacketIsCutOff) {
  ScratchDir scratch;
  std::string dir = scratch.path() + "/trace";
  RecordAndDie(dir, {4000, 8000}, 8001);  // each stream in two packets at least, whatever their size
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/stream_1").c_str(), &st), 0);
  ASSERT_EQ(::truncate((dir + "/stream_1").c_str(), st.st_size - 10), 0);  // the kill tore it
  EXPECT_EQ(CountedEvents(dir), -1) << "babeltrace2 read a torn packet";
  uint64_t cut = 0;
  ASSERT_EQ(CutTornPackets(dir, &cut), 0);
  EXPECT_GT(cut, 0u);
  int kept = CountedEvents(dir);
  EXPECT_GT(kept, 4000);
  EXPECT_LT(kept, 8000);
  ASSERT_EQ(CutTornPackets(dir, &cut), 0);
  EXPECT_EQ(cut, 0u) << "whole packets are left alone";
}

TEST(CtfRecoverTest, DirectoryWithoutMetadataIsRefused) {
  ScratchDir scratch;
  uint64_t cut = 0;
  EXPECT_EQ(CutTornPackets(scratch.path(), &cut), EINVAL);
  EXPECT_EQ(CutTornPackets(scratch.path() + "/missing", &cut), EINVAL);
}

}  // namespace
}  // namespace udiag::record::ctf
