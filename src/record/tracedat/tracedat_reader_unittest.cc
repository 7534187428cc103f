// OpenTraceDatReader: round trips through the writer, a real kernel trace,
// error paths, and malformed files (truncated, bytes flipped).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "record/tracedat/page_encoder.h"
#include "record/tracedat/test_trace.h"
#include "record/tracedat/tracedat_layout.h"
#include "record/tracedat/tracedat_reader.h"
#include "record/tracedat/tracedat_writer.h"

namespace udiag::record {
namespace {

using tracedat::testing::OwnedRecord;
using tracedat::testing::SampleTrace;

struct ReadBack {
  TraceInfo info;
  std::vector<EventType> types;
  std::vector<Task> tasks;
  std::vector<OwnedRecord> records;
};

ReadBack ReadAll(TraceReader& reader) {
  ReadBack out{reader.info(), reader.event_types(), reader.tasks(), {}};
  Record record;
  while (reader.Next(&record)) {
    OwnedRecord owned{record, std::vector<uint8_t>(record.data.begin(), record.data.end())};
    out.records.push_back(std::move(owned));
  }
  return out;
}

std::vector<uint8_t> PaddedTo4(std::span<const uint8_t> data) {
  std::vector<uint8_t> padded(data.begin(), data.end());
  padded.resize((padded.size() + 3) / 4 * 4, 0);
  return padded;
}

void ExpectSameFields(const std::vector<schema::Field>& got, const std::vector<schema::Field>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].type, want[i].type);
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].kind, want[i].kind);
    EXPECT_EQ(got[i].offset, want[i].offset);
    EXPECT_EQ(got[i].size, want[i].size);
    EXPECT_EQ(got[i].is_signed, want[i].is_signed);
    EXPECT_EQ(got[i].is_string, want[i].is_string);
  }
}

void ExpectSameTrace(const ReadBack& got, const SampleTrace& want) {
  EXPECT_EQ(got.info.cpus, want.info.cpus);
  EXPECT_EQ(got.info.clock, want.info.clock);
  EXPECT_EQ(got.info.hostname, want.info.hostname);
  EXPECT_EQ(got.info.lost_at_end, want.info.lost_at_end);
  ASSERT_EQ(got.types.size(), want.types.size());
  for (size_t i = 0; i < want.types.size(); ++i) {
    EXPECT_EQ(got.types[i].id, want.types[i].id);
    EXPECT_EQ(got.types[i].system, want.types[i].system);
    EXPECT_EQ(got.types[i].name, want.types[i].name);
    ExpectSameFields(got.types[i].fields, want.types[i].fields);
  }
  ASSERT_EQ(got.tasks.size(), want.tasks.size());
  for (size_t i = 0; i < want.tasks.size(); ++i) {
    EXPECT_EQ(got.tasks[i].pid, want.tasks[i].pid);
    EXPECT_EQ(got.tasks[i].tid, want.tasks[i].tid);
    EXPECT_EQ(got.tasks[i].comm, want.tasks[i].comm);
  }
  ASSERT_EQ(got.records.size(), want.records.size());
  for (size_t i = 0; i < want.records.size(); ++i) {
    const Record& g = got.records[i].record;
    const Record& w = want.records[i].record;
    EXPECT_EQ(g.timestamp, w.timestamp) << "record " << i;
    EXPECT_EQ(g.pid, w.pid) << "record " << i;
    EXPECT_EQ(g.tid, w.tid) << "record " << i;
    EXPECT_EQ(g.cpu, w.cpu) << "record " << i;
    EXPECT_EQ(g.event_id, w.event_id) << "record " << i;
    EXPECT_EQ(g.lost_before, w.lost_before) << "record " << i;
    EXPECT_EQ(got.records[i].bytes, PaddedTo4(want.records[i].bytes)) << "record " << i;
  }
}

class TraceDatReaderTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const SampleTrace& trace) {
    std::string path = dir_ + "/" + name;
    base::ErrorOr<std::unique_ptr<TraceWriter>> writer = OpenTraceDatWriter(path);
    EXPECT_TRUE(writer.ok());
    if (writer.ok()) {
      EXPECT_EQ(tracedat::testing::WriteTrace(**writer, trace), 0);
    }
    return path;
  }

  tracedat::testing::TempDir temp_;
  const std::string& dir_ = temp_.path();
};

TEST_F(TraceDatReaderTest, RoundTripKeepsTypesTasksRecordsAndLosses) {
  SampleTrace trace = tracedat::testing::MakeSampleTrace(1000000000000ull, /*with_loss=*/true);
  trace.info.lost_at_end = 3;
  base::ErrorOr<std::unique_ptr<TraceReader>> reader = OpenTraceDatReader(Write("s.dat", trace));
  ASSERT_TRUE(reader.ok()) << reader.error();
  ExpectSameTrace(ReadAll(**reader), trace);
}

TEST_F(TraceDatReaderTest, RoundTripOfManyPagesMergesCpusInTimeOrder) {
  SampleTrace trace;
  trace.types = {tracedat::testing::MakeEventType(50, "user_events", "seq u64 n;__data_loc char[] s")};
  trace.tasks = {{1, 1, "one"}, {1, 2, "two"}, {3, 3, "three"}};
  trace.info.cpus = 4;  // cpu 3 stays empty
  std::mt19937 random(7);
  uint64_t ts = 77;
  for (uint32_t n = 0; n < 5000; ++n) {
    // Strictly increasing: the reader orders equal timestamps by cpu.
    ts += 1 + (random() % 3 == 0 ? random() % 400000000 : random() % 2000);
    uint32_t tid = 1 + random() % 3;
    std::string text(random() % 300, static_cast<char>('a' + n % 26));
    tracedat::testing::RecordBytes bytes(trace.types[0], tid);
    bytes.Int("n", n).Dynamic("s", std::string_view(text.c_str(), text.size() + 1));
    OwnedRecord owned{{ts, tid == 3 ? 3u : 1u, tid, static_cast<uint16_t>(n % 3), 50,
                       n % 997 == 0 ? n + 1 : 0, {}},
                      bytes.bytes()};
    trace.records.push_back(std::move(owned));
  }
  for (OwnedRecord& owned : trace.records) owned.record.data = owned.bytes;
  base::ErrorOr<std::unique_ptr<TraceReader>> reader = OpenTraceDatReader(Write("m.dat", trace));
  ASSERT_TRUE(reader.ok()) << reader.error();
  ExpectSameTrace(ReadAll(**reader), trace);
}

// A page-mode recording hands the writer whole pages; they are stored as
// they are, beside records written one by one for another cpu.
TEST_F(TraceDatReaderTest, PagesAreStoredAsTheyAreBesideRecords) {
  SampleTrace trace = tracedat::testing::MakeSampleTrace(1000000000000ull, /*with_loss=*/true);
  std::string path = dir_ + "/pages.dat";
  base::ErrorOr<std::unique_ptr<TraceWriter>> writer = OpenTraceDatWriter(path);
  ASSERT_TRUE(writer.ok());
  for (const EventType& type : trace.types) (*writer)->AddEventType(type);
  for (const Task& task : trace.tasks) (*writer)->AddTask(task);
  // cpu 1's records (the loss among them) go as pages of two records each.
  tracedat::PageEncoder encoder;
  std::vector<uint8_t> page(tracedat::kPageSize);
  int on_page = 0;
  auto send_page = [&] {
    encoder.FinishInto(page.data());
    ASSERT_TRUE((*writer)->WritePage(1, page));
    on_page = 0;
  };
  for (const OwnedRecord& owned : trace.records) {
    const Record& record = owned.record;
    if (record.cpu != 1) {
      (*writer)->Write(record);
      continue;
    }
    if (record.lost_before > 0) {
      if (!encoder.empty()) send_page();
      encoder.MarkLostBefore(record.lost_before);
    }
    ASSERT_TRUE(encoder.Append(record.timestamp, record.data));
    if (++on_page == 2) send_page();
  }
  if (!encoder.empty()) send_page();
  ASSERT_EQ((*writer)->Finish(trace.info), 0);
  base::ErrorOr<std::unique_ptr<TraceReader>> reader = OpenTraceDatReader(path);
  ASSERT_TRUE(reader.ok()) << reader.error();
  ExpectSameTrace(ReadAll(**reader), trace);
}

// Over a block of pages per cpu, the first record on cpu 2: the cpus'
// regions are filled out of order and compacted at the end.
SampleTrace ManyBlocksTrace() {
  SampleTrace trace;
  trace.types = {tracedat::testing::MakeEventType(51, "user_events", "fill u64 n;char[80] pad")};
  trace.tasks = {{9, 9, "nine"}};
  trace.info.cpus = 3;
  for (uint32_t n = 0; n < 60000; ++n) {
    tracedat::testing::RecordBytes bytes(trace.types[0], 9);
    bytes.Int("n", n);
    uint16_t cpu = static_cast<uint16_t>((n / 1000 + 2) % 3);
    trace.records.push_back({{1000 + n * 10ull, 9, 9, cpu, 51, n == 30000 ? 4u : 0u, {}}, bytes.bytes()});
  }
  for (OwnedRecord& owned : trace.records) owned.record.data = owned.bytes;
  return trace;
}

TEST_F(TraceDatReaderTest, RegionsAreCompactedOnThisFileSystem) {
  SampleTrace trace = ManyBlocksTrace();
  std::string path = Write("blocks.dat", trace);
  base::ErrorOr<std::unique_ptr<TraceReader>> reader = OpenTraceDatReader(path);
  ASSERT_TRUE(reader.ok()) << reader.error();
  ExpectSameTrace(ReadAll(**reader), trace);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_LT(st.st_size, 16 << 20) << "no gap left between the cpus";
}

TEST_F(TraceDatReaderTest, RegionsAreCompactedWhereGapsCannotCollapse) {
  int fd = ::memfd_create("blocks.dat", MFD_CLOEXEC);  // tmpfs: no FALLOC_FL_COLLAPSE_RANGE
  ASSERT_GE(fd, 0);
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  SampleTrace trace = ManyBlocksTrace();
  base::ErrorOr<std::unique_ptr<TraceWriter>> writer = OpenTraceDatWriter(path);
  ASSERT_TRUE(writer.ok()) << writer.error();
  ASSERT_EQ(tracedat::testing::WriteTrace(**writer, trace), 0);
  base::ErrorOr<std::unique_ptr<TraceReader>> reader = OpenTraceDatReader(path);
  ASSERT_TRUE(reader.ok()) << reader.error();
  ExpectSameTrace(ReadAll(**reader), trace);
  ::close(fd);
}

TEST_F(TraceDatReaderTest, PipeGetsHeaderThenEveryCpuInOrder) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  std::string copy = dir_ + "/from-pipe.dat";
  std::thread drain([&] {
    std::ofstream out(copy, std::ios::binary);
    char buffer[65536];
    for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) out.write(buffer, n);
  });
  SampleTrace trace = ManyBlocksTrace();
  {
    base::ErrorOr<std::unique_ptr<TraceWriter>> writer =
        OpenTraceDatWriter("/proc/self/fd/" + std::to_string(pipe_fds[1]));
    ::close(pipe_fds[1]);  // the writer has its own descriptor now
    ASSERT_TRUE(writer.ok()) << writer.error();
    EXPECT_EQ(tracedat::testing::WriteTrace(**writer, trace), 0);
  }
  drain.join();
  ::close(pipe_fds[0]);
  base::ErrorOr<std::unique_ptr<TraceReader>> reader = OpenTraceDatReader(copy);
  ASSERT_TRUE(reader.ok()) << reader.error();
  ExpectSameTrace(ReadAll(**reader), trace);
}

TEST_F(TraceDatReaderTest, RecordTooBigForAPageBecomesALoss) {
  SampleTrace trace;
  trace.types = {tracedat::testing::MakeEventType(60, "user_events", "blob __data_loc u8[] b")};
  trace.tasks = {{4, 4, "big"}};
  std::string huge(5000, 'x'), small(4, 'y');
  for (const std::string* payload : {&small, &huge, &small, &huge}) {
    tracedat::testing::RecordBytes bytes(trace.types[0], 4);
    bytes.Dynamic("b", *payload);
    trace.records.push_back({{100 + trace.records.size(), 4, 4, 0, 60, 0, {}}, bytes.bytes()});
  }
  for (OwnedRecord& owned : trace.records) owned.record.data = owned.bytes;
  base::ErrorOr<std::unique_ptr<TraceReader>> reader = OpenTraceDatReader(Write("b.dat", trace));
  ASSERT_TRUE(reader.ok());
  ReadBack got = ReadAll(**reader);
  ASSERT_EQ(got.records.size(), 2u);
  EXPECT_EQ(got.records[0].record.lost_before, 0u);
  EXPECT_EQ(got.records[1].record.lost_before, 1u);  // the first huge one
  EXPECT_EQ(got.records[1].record.timestamp, 102u);
  EXPECT_EQ(got.info.lost_at_end, 1u);  // the second
}

TEST_F(TraceDatReaderTest, ReadsARealKernelTrace) {
  base::ErrorOr<std::unique_ptr<TraceReader>> reader =
      OpenTraceDatReader(TRACEDAT_TESTDATA_DIR "/kernel_mono.dat");
  ASSERT_TRUE(reader.ok()) << reader.error();
  ReadBack got = ReadAll(**reader);
  EXPECT_EQ(got.info.clock, "mono");
  EXPECT_EQ(got.info.cpus, 2u);
  EXPECT_EQ(got.info.hostname, "vm");
  ASSERT_EQ(got.types.size(), 1u);
  EXPECT_EQ(got.types[0].system, "sched");
  EXPECT_EQ(got.types[0].name, "sched_process_exec");
  ASSERT_EQ(got.types[0].fields.size(), 3u);
  EXPECT_EQ(got.types[0].fields[0].type, "__data_loc char[]");
  EXPECT_EQ(got.types[0].fields[2].type, "pid_t");
  ASSERT_EQ(got.records.size(), 15u);
  EXPECT_EQ(got.records[0].record.timestamp, 12838206606345ull);
  EXPECT_EQ(got.records[0].record.tid, 11775u);
  EXPECT_EQ(got.records[0].record.cpu, 1u);
  EXPECT_EQ(got.records[0].record.event_id, got.types[0].id);
  for (size_t i = 1; i < got.records.size(); ++i) {
    EXPECT_GE(got.records[i].record.timestamp, got.records[i - 1].record.timestamp);
  }
  bool found_true = false;
  for (const Task& task : got.tasks) found_true |= task.tid == 11775 && task.comm == "true";
  EXPECT_TRUE(found_true);
}

// trace-cmd's own v7 (uncompressed) rewrite of a file reads back the same.
TEST_F(TraceDatReaderTest, ReadsVersion7FromTraceCmdConvert) {
  SampleTrace trace = tracedat::testing::MakeSampleTrace(1000000000000ull, true);
  trace.info.lost_at_end = 2;
  std::string v6 = Write("v6.dat", trace), v7 = dir_ + "/v7.dat";
  int status = -1;
  std::string output = tracedat::testing::RunCommand(
      "trace-cmd convert --file-version 7 --compression none -i " + v6 + " -o " + v7, &status);
  ASSERT_EQ(status, 0) << output;
  base::ErrorOr<std::unique_ptr<TraceReader>> reader = OpenTraceDatReader(v7);
  ASSERT_TRUE(reader.ok()) << reader.error();
  ExpectSameTrace(ReadAll(**reader), trace);

  std::string kernel_v7 = dir_ + "/kernel7.dat";
  output = tracedat::testing::RunCommand("trace-cmd convert --file-version 7 --compression none -i " TRACEDAT_TESTDATA_DIR
                                         "/kernel_mono.dat -o " + kernel_v7, &status);
  ASSERT_EQ(status, 0) << output;
  base::ErrorOr<std::unique_ptr<TraceReader>> kernel = OpenTraceDatReader(kernel_v7);
  ASSERT_TRUE(kernel.ok()) << kernel.error();
  ReadBack got = ReadAll(**kernel);
  EXPECT_EQ(got.info.clock, "mono");
  ASSERT_EQ(got.records.size(), 15u);
  EXPECT_EQ(got.records[0].record.timestamp, 12838206606345ull);

  std::string compressed = dir_ + "/zstd.dat";
  output = tracedat::testing::RunCommand("trace-cmd convert --file-version 7 --compression any -i " + v6 + " -o " + compressed, &status);
  ASSERT_EQ(status, 0) << output;
  EXPECT_EQ(OpenTraceDatReader(compressed).error(), EINVAL);
}

TEST_F(TraceDatReaderTest, OpenErrorsCarryTheErrno) {
  EXPECT_EQ(OpenTraceDatReader(dir_ + "/missing.dat").error(), ENOENT);
  std::ofstream(dir_ + "/empty.dat").close();
  EXPECT_EQ(OpenTraceDatReader(dir_ + "/empty.dat").error(), EINVAL);
  std::ofstream(dir_ + "/text.dat") << "not a trace\n";
  EXPECT_EQ(OpenTraceDatReader(dir_ + "/text.dat").error(), EINVAL);
  EXPECT_EQ(OpenTraceDatWriter(dir_ + "/no/such/dir.dat").error(), ENOENT);
}

TEST_F(TraceDatReaderTest, FailedWriteReturnsTheErrno) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full";
  base::ErrorOr<std::unique_ptr<TraceWriter>> writer = OpenTraceDatWriter("/dev/full");
  ASSERT_TRUE(writer.ok()) << writer.error();
  SampleTrace trace = tracedat::testing::MakeSampleTrace(1, false);
  EXPECT_EQ(tracedat::testing::WriteTrace(**writer, trace), ENOSPC);
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// A file in memory with a path, so thousands of damaged copies cost no disk.
class MemoryFile {
 public:
  MemoryFile() : fd_(::memfd_create("damaged.dat", MFD_CLOEXEC)) {}
  ~MemoryFile() { ::close(fd_); }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }
  void Set(std::span<const uint8_t> bytes) {
    ASSERT_EQ(::ftruncate(fd_, 0), 0);
    ASSERT_EQ(::pwrite(fd_, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  }

 private:
  int fd_;
};

// Opens a damaged file: it must fail with EINVAL or read cleanly to the end.
void ExpectErrorOrCleanRead(const std::string& path, size_t* rejected) {
  base::ErrorOr<std::unique_ptr<TraceReader>> reader = OpenTraceDatReader(path);
  if (!reader.ok()) {
    EXPECT_EQ(reader.error(), EINVAL);
    ++*rejected;
    return;
  }
  Record record;
  size_t count = 0;
  while ((*reader)->Next(&record)) {
    ASSERT_GE(record.data.size(), schema::kCommonHeaderSize);
    ++count;
  }
  EXPECT_LT(count, 100000u);
}

// Damages `bytes` (a whole file) in many ways; each copy must fail with
// EINVAL or read cleanly. The metadata, up to `metadata_end`, is cut every
// `metadata_step` bytes, the rest every 97.
void FuzzFile(const std::vector<uint8_t>& bytes, size_t metadata_end, size_t metadata_step) {
  MemoryFile damaged;
  size_t rejected = 0, cuts = 0;
  for (size_t length = 0; length < bytes.size(); length += length < metadata_end ? metadata_step : 97) {
    damaged.Set(std::span(bytes).first(length));
    ExpectErrorOrCleanRead(damaged.path(), &rejected);
    ++cuts;
  }
  size_t truncations = rejected;
  // Nearly every cut is caught (v7's trailing strings section is optional).
  EXPECT_GT(truncations, cuts * 9 / 10);

  std::mt19937 random(12345);
  for (int round = 0; round < 3000; ++round) {
    std::vector<uint8_t> copy = bytes;
    int flips = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < flips; ++i) {
      // Half the flips hit the metadata, half anywhere.
      size_t offset = random() % 2 ? random() % metadata_end : random() % copy.size();
      copy[offset] ^= static_cast<uint8_t>(1 + random() % 255);
    }
    damaged.Set(copy);
    ExpectErrorOrCleanRead(damaged.path(), &rejected);
  }
  EXPECT_GT(rejected, truncations);  // some flips were caught, not all ignored
}

TEST_F(TraceDatReaderTest, TruncatedAndCorruptedFilesFailCleanly) {
  std::string v6 = Write("good.dat", tracedat::testing::MakeSampleTrace(1000000000000ull, true));
  FuzzFile(ReadBytes(v6), 4096, 1);
}

TEST_F(TraceDatReaderTest, TruncatedAndCorruptedVersion7FilesFailCleanly) {
  std::string v6 = Write("good.dat", tracedat::testing::MakeSampleTrace(1000000000000ull, true));
  std::string v7 = dir_ + "/good7.dat";
  int status = -1;
  std::string output = tracedat::testing::RunCommand(
      "trace-cmd convert --file-version 7 --compression none -i " + v6 + " -o " + v7, &status);
  ASSERT_EQ(status, 0) << output;
  std::vector<uint8_t> bytes = ReadBytes(v7);
  FuzzFile(bytes, bytes.size(), 7);  // v7 keeps options after the pages too
}

}  // namespace
}  // namespace udiag::record
