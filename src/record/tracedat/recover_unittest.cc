// A trace.dat while it is recorded: readable up to each checkpoint without
// Finish (as after a kill -9), and `udiag recover` keeps the complete pages
// written after the last checkpoint, restores a torn header from its twin,
// compacts the sparse file, and leaves finished files alone.
#include "record/tracedat/recover.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "record/tracedat/test_trace.h"
#include "record/tracedat/tracedat_reader.h"
#include "record/tracedat/tracedat_writer.h"

namespace udiag::record::tracedat {
namespace {

using testing::OwnedRecord;
using testing::SampleTrace;

constexpr uint32_t kRecords = 60000;  // ~6 MB: several blocks on each cpu

// Cpus that get a region (the others are spooled aside until Finish).
uint16_t RegionCpus() { return static_cast<uint16_t>(std::min(2, get_nprocs_conf())); }

SampleTrace FillerTrace() {
  SampleTrace trace;
  trace.types = {testing::MakeEventType(51, "user_events", "fill u64 n;char[80] pad")};
  trace.tasks = {{9, 9, "nine"}};
  trace.info.cpus = RegionCpus();
  for (uint32_t n = 0; n < kRecords; ++n) {
    testing::RecordBytes bytes(trace.types[0], 9);
    bytes.Int("n", n);
    uint16_t cpu = static_cast<uint16_t>(n / 1000 % RegionCpus());
    trace.records.push_back({{1000 + n * 10ull, 9, 9, cpu, 51, 0, {}}, bytes.bytes()});
  }
  for (OwnedRecord& owned : trace.records) owned.record.data = owned.bytes;
  return trace;
}

// The records' `n`, in the order the reader gives them; empty if it cannot open.
std::vector<uint64_t> ReadNumbers(const std::string& path) {
  std::vector<uint64_t> numbers;
  base::ErrorOr<std::unique_ptr<TraceReader>> reader = OpenTraceDatReader(path);
  if (!reader.ok()) return numbers;
  Record record;
  while ((*reader)->Next(&record)) {
    uint64_t n = 0;
    std::memcpy(&n, record.data.data() + 8, sizeof n);
    numbers.push_back(n);
  }
  return numbers;
}

uint64_t FileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

class RecoverTest : public ::testing::Test {
 protected:
  // Records the first `checkpointed` records, checkpoints, records up to
  // `written` more, and "dies": the writer goes without Finish (its queued
  // blocks do reach the file, as they would before a kill).
  std::string RecordAndDie(const std::string& name, uint32_t checkpointed, uint32_t written) {
    std::string path = dir_ + "/" + name;
    SampleTrace trace = FillerTrace();
    base::ErrorOr<std::unique_ptr<TraceWriter>> writer = OpenTraceDatWriter(path);
    EXPECT_TRUE(writer.ok());
    if (!writer.ok()) return path;
    for (const EventType& type : trace.types) (*writer)->AddEventType(type);
    for (const Task& task : trace.tasks) (*writer)->AddTask(task);
    for (uint32_t n = 0; n < written; ++n) {
      if (n == checkpointed) {
        EXPECT_EQ((*writer)->Checkpoint(trace.info), 0);
      }
      (*writer)->Write(trace.records[n].record);
    }
    return path;
  }

  testing::TempDir temp_;
  const std::string& dir_ = temp_.path();
};

TEST_F(RecoverTest, ReadableUpToTheCheckpointWithoutFinish) {
  std::string path = RecordAndDie("ckpt.dat", 30000, 30000 + 1);
  std::vector<uint64_t> numbers = ReadNumbers(path);
  ASSERT_EQ(numbers.size(), 30000u) << "every record before the checkpoint, none after";
  for (uint64_t n = 0; n < numbers.size(); ++n) ASSERT_EQ(numbers[n], n);
  EXPECT_GT(FileSize(path), uint64_t{1} << 32) << "still sparse: regions of at least 4 GiB";
}

TEST_F(RecoverTest, RecoverKeepsPagesAfterTheCheckpointAndCompacts) {
  std::string path = RecordAndDie("after.dat", 20000, kRecords);
  ASSERT_EQ(ReadNumbers(path).size(), 20000u);
  Recovery recovery;
  ASSERT_EQ(RecoverTraceDat(path, &recovery), 0);
  EXPECT_TRUE(recovery.was_under_way);
  EXPECT_FALSE(recovery.header_from_twin);
  EXPECT_GT(recovery.pages_found, 0u);
  std::vector<uint64_t> numbers = ReadNumbers(path);
  // Whole blocks after the checkpoint reached the file; the last, partly
  // filled one of each cpu died with the writer.
  EXPECT_GT(numbers.size(), 40000u);
  EXPECT_LT(numbers.size(), static_cast<size_t>(kRecords));
  for (size_t i = 1; i < numbers.size(); ++i) ASSERT_LT(numbers[i - 1], numbers[i]) << "time order";
  EXPECT_LT(FileSize(path), uint64_t{16} << 20) << "compacted";

  // A second recovery finds a finished file.
  ASSERT_EQ(RecoverTraceDat(path, &recovery), 0);
  EXPECT_FALSE(recovery.was_under_way);
  EXPECT_EQ(ReadNumbers(path).size(), numbers.size());
}

TEST_F(RecoverTest, TornHeaderIsRestoredFromItsTwin) {
  std::string path = RecordAndDie("torn.dat", 30000, 30001);
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    std::string garbage(100, '\xff');
    file.seekp(200);
    file.write(garbage.data(), garbage.size());
  }
  EXPECT_TRUE(ReadNumbers(path).empty()) << "the torn header still reads";
  Recovery recovery;
  ASSERT_EQ(RecoverTraceDat(path, &recovery), 0);
  EXPECT_TRUE(recovery.header_from_twin);
  EXPECT_EQ(ReadNumbers(path).size(), 30000u);
}

TEST_F(RecoverTest, FinishedFileIsLeftAsItIs) {
  std::string path = dir_ + "/done.dat";
  SampleTrace trace = FillerTrace();
  base::ErrorOr<std::unique_ptr<TraceWriter>> writer = OpenTraceDatWriter(path);
  ASSERT_TRUE(writer.ok());
  ASSERT_EQ(testing::WriteTrace(**writer, trace), 0);
  std::ifstream before_stream(path, std::ios::binary);
  std::string before((std::istreambuf_iterator<char>(before_stream)), std::istreambuf_iterator<char>());
  Recovery recovery;
  ASSERT_EQ(RecoverTraceDat(path, &recovery), 0);
  EXPECT_FALSE(recovery.was_under_way);
  std::ifstream after_stream(path, std::ios::binary);
  std::string after((std::istreambuf_iterator<char>(after_stream)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(before == after);
  EXPECT_EQ(ReadNumbers(path).size(), static_cast<size_t>(kRecords));
}

TEST_F(RecoverTest, WhatIsNotATraceDatIsRefused) {
  std::string path = dir_ + "/text.dat";
  std::ofstream(path) << "hello\n";
  Recovery recovery;
  EXPECT_EQ(RecoverTraceDat(path, &recovery), EINVAL);
  EXPECT_EQ(RecoverTraceDat(dir_ + "/missing.dat", &recovery), ENOENT);
}

}  // namespace
}  // namespace udiag::record::tracedat
