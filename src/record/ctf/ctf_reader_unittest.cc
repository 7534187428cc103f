// Round trip writer -> reader, and input the reader must refuse without
// crashing (run under ASan/UBSan in the sanitizer build).

#include "record/ctf/ctf_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "record/ctf/ctf_writer.h"
#include "record/ctf/sample_trace.h"
#include "record/ctf/test_support.h"

namespace udiag::record::ctf {
namespace {

void Write(const SampleTrace& trace, const std::string& dir) {
  auto writer = OpenCtfWriter(dir);
  ASSERT_TRUE(writer.ok()) << writer.error();
  ASSERT_EQ(WriteSampleTrace(trace, writer->get()), 0);
}

bool SameField(const schema::Field& a, const schema::Field& b) {
  return a.type == b.type && a.name == b.name && a.kind == b.kind && a.offset == b.offset &&
         a.size == b.size && a.is_signed == b.is_signed && a.is_string == b.is_string;
}

void ExpectSameModel(const SampleTrace& want, TraceReader* reader) {
  EXPECT_EQ(reader->info().cpus, want.info.cpus);
  EXPECT_EQ(reader->info().clock, want.info.clock);
  EXPECT_EQ(reader->info().hostname, want.info.hostname);
  EXPECT_EQ(reader->info().lost_at_end, want.info.lost_at_end);
  ASSERT_EQ(reader->event_types().size(), want.types.size());
  for (size_t i = 0; i < want.types.size(); ++i) {
    const EventType &got = reader->event_types()[i], &type = want.types[i];
    EXPECT_EQ(got.id, type.id);
    EXPECT_EQ(got.system, type.system);
    EXPECT_EQ(got.name, type.name);
    ASSERT_EQ(got.fields.size(), type.fields.size()) << type.name;
    for (size_t f = 0; f < type.fields.size(); ++f) {
      EXPECT_TRUE(SameField(got.fields[f], type.fields[f])) << type.name << "." << type.fields[f].name;
    }
  }
  ASSERT_EQ(reader->tasks().size(), want.tasks.size());
  for (size_t i = 0; i < want.tasks.size(); ++i) {
    EXPECT_EQ(reader->tasks()[i].pid, want.tasks[i].pid);
    EXPECT_EQ(reader->tasks()[i].tid, want.tasks[i].tid);
    EXPECT_EQ(reader->tasks()[i].comm, want.tasks[i].comm);
  }
  Record got;
  for (const StoredRecord& stored : want.records) {
    const Record& record = stored.record;
    ASSERT_TRUE(reader->Next(&got));
    EXPECT_EQ(got.timestamp, record.timestamp);
    EXPECT_EQ(got.pid, record.pid);
    EXPECT_EQ(got.tid, record.tid);
    EXPECT_EQ(got.cpu, record.cpu);
    EXPECT_EQ(got.event_id, record.event_id);
    EXPECT_EQ(got.lost_before, record.lost_before) << record.timestamp;
    EXPECT_EQ(std::vector<uint8_t>(got.data.begin(), got.data.end()), stored.bytes) << record.timestamp;
  }
  EXPECT_FALSE(reader->Next(&got));
}

TEST(CtfReaderTest, ReadsBackTheSampleTraceExactly) {
  ScratchDir scratch;
  SampleTrace trace = MakeSampleTrace();
  Write(trace, scratch.path());
  auto reader = OpenCtfReader(scratch.path());
  ASSERT_TRUE(reader.ok()) << reader.error();
  ExpectSameModel(trace, reader->get());
}

TEST(CtfReaderTest, ReadsBackManyPackets) {
  ScratchDir scratch;
  SampleTrace trace = MakeLargeTrace();
  Write(trace, scratch.path());
  EXPECT_GT(std::filesystem::file_size(scratch.path() + "/stream_1"), 4u * 64 * 1024);
  auto reader = OpenCtfReader(scratch.path());
  ASSERT_TRUE(reader.ok()) << reader.error();
  ExpectSameModel(trace, reader->get());
}

TEST(CtfReaderTest, RefusesWhatItDidNotWrite) {
  ScratchDir scratch;
  EXPECT_EQ(OpenCtfReader(scratch.path() + "/missing").error(), ENOENT);
  std::ofstream(scratch.path() + "/metadata") << "/* CTF 1.8 */\ntrace { major = 1; minor = 8; };\n";
  EXPECT_EQ(OpenCtfReader(scratch.path()).error(), EINVAL);
}

TEST(CtfReaderTest, RefusesATruncatedStream) {
  ScratchDir scratch;
  Write(MakeSampleTrace(), scratch.path());
  std::string stream = scratch.path() + "/stream_1";
  std::filesystem::resize_file(stream, std::filesystem::file_size(stream) - 1);
  EXPECT_EQ(OpenCtfReader(scratch.path()).error(), EINVAL);
}

// Truncations and byte flips anywhere in the metadata or a stream: the
// reader either refuses with EINVAL or reads records, and never crashes.
TEST(CtfReaderTest, SurvivesTruncationsAndByteFlips) {
  ScratchDir scratch;
  std::string good = scratch.path() + "/good";
  Write(MakeSampleTrace(), good);
  const std::vector<std::string> files = {"metadata", "stream_0", "stream_1", "stream_2"};
  std::mt19937 random(12345);
  int refused = 0, read = 0;
  for (int round = 0; round < 400; ++round) {
    std::string dir = scratch.path() + "/round";
    std::filesystem::remove_all(dir);
    std::filesystem::copy(good, dir);
    std::string victim = dir + "/" + files[random() % files.size()];
    std::string bytes = ReadFileText(victim);
    if (round % 2 == 0) {
      bytes.resize(random() % bytes.size());
    } else {
      for (int flips = 1 + random() % 3; flips > 0; --flips) bytes[random() % bytes.size()] ^= 1 << random() % 8;
    }
    std::ofstream(victim, std::ios::binary | std::ios::trunc) << bytes;
    auto reader = OpenCtfReader(dir);
    if (!reader.ok()) {
      EXPECT_EQ(reader.error(), EINVAL) << victim;
      ++refused;
      continue;
    }
    Record record;
    while (reader.value()->Next(&record)) {
    }
    ++read;
  }
  // Every truncation that cuts a packet is refused; flips in values are read.
  EXPECT_GE(refused, 150);
  EXPECT_GT(read, 0);
}

}  // namespace
}  // namespace udiag::record::ctf
