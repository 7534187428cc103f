// Files from OpenPerfettoWriter, decoded by protoc against the upstream
// Perfetto protos (protos/, see LICENSE_NOTE.md) and compared with a golden
// text. Set UDIAG_UPDATE_GOLDEN=1 to rewrite the golden file after a
// deliberate change (then review its diff).

#include "record/perfetto/perfetto_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "record/perfetto/perfetto_test_support.h"

namespace udiag::record {
namespace {

using testing::DecodeWithProtoc;
using testing::kProtoDir;
using testing::ReadFile;
using testing::ScratchPath;

const std::string kGolden = kProtoDir + "/testdata/sample_trace.golden.txt";

std::vector<schema::Field> FieldsOf(const std::string& command) {
  schema::EventDescription event;
  EXPECT_EQ(schema::ParseCommand(command, &event), 0) << command;
  return event.fields;
}

// Little-endian bytes of `value`.
void Put(std::vector<uint8_t>* out, uint64_t value, size_t size) {
  for (size_t i = 0; i < size; ++i) out->push_back(static_cast<uint8_t>(value >> (8 * i)));
}

void PutText(std::vector<uint8_t>* out, std::string_view text) {
  out->insert(out->end(), text.begin(), text.end());
  out->push_back(0);
}

// A plain user event: u32 count; char[8] msg; __data_loc char[] path; s64 delta.
std::vector<uint8_t> CounterRecord(uint16_t type, uint32_t count, int64_t delta) {
  std::vector<uint8_t> out;
  Put(&out, type, 2);
  Put(&out, 0, 6);
  Put(&out, count, 4);                                  // @8
  out.insert(out.end(), {'h', 'i', 0, 0, 0, 0, 0, 0});  // @12
  Put(&out, (4u << 16) | 32u, 4);                       // @20: "/tm\0" at 32
  Put(&out, static_cast<uint64_t>(delta), 8);           // @24
  PutText(&out, "/tm");                                 // @32
  return out;
}

// An EventHeader event "Request" with strings, a port, an errno, a bool, a
// variable array, a nested struct and an activity id.
std::vector<uint8_t> RequestRecord(uint16_t type) {
  std::vector<uint8_t> metadata;
  PutText(&metadata, "Request");
  auto def = [&](std::string_view name, uint8_t encoding, int format = -1) {
    PutText(&metadata, name);
    metadata.push_back(static_cast<uint8_t>(encoding | (format >= 0 ? 0x80 : 0)));
    if (format >= 0) metadata.push_back(static_cast<uint8_t>(format));
  };
  def("url", 7);              // ZStringChar8
  def("port", 3, 16);         // Value16, port
  def("status", 4, 4);        // Value32, errno
  def("ok", 2, 7);            // Value8, boolean
  def("sizes", 4 | 0x40, 2);  // Value32[], signed
  def("origin", 1, 2);        // struct of 2
  def("addr", 4, 17);         // Value32, IP address
  def("ratio", 5, 8);         // Value64, float
  def("huge", 5);             // Value64, unsigned

  std::vector<uint8_t> out;
  Put(&out, type, 2);
  Put(&out, 0, 6);
  out.insert(out.end(), {0x07, 1, 0x2a, 0, 0, 0, 1, 4});  // flags, version 1, id 42, opcode 1, level 4
  Put(&out, 16, 2);
  Put(&out, 0x8002, 2);  // activity id, more follow
  for (int i = 0; i < 16; ++i) out.push_back(static_cast<uint8_t>(0xa0 + i));
  Put(&out, metadata.size(), 2);
  Put(&out, 1, 2);  // metadata
  out.insert(out.end(), metadata.begin(), metadata.end());
  PutText(&out, "/index.html");
  out.insert(out.end(), {0x1f, 0x90});  // 8080
  Put(&out, 104, 4);                    // ECONNRESET
  out.push_back(1);
  Put(&out, 2, 2);
  Put(&out, static_cast<uint32_t>(-7), 4);
  Put(&out, 9, 4);
  out.insert(out.end(), {192, 0, 2, 1});
  Put(&out, 0x3ff8000000000000, 8);  // 1.5
  Put(&out, 0xffffffffffffffff, 8);
  return out;
}

// Writes the sample trace: two processes, three threads (one named late),
// a plain and an EventHeader event type, losses before a record and at the
// end, and a record of an unannounced type.
void WriteSampleTrace(const std::string& path) {
  auto writer = OpenPerfettoWriter(path, ClockSample{5000, 7000});
  ASSERT_TRUE(writer.ok()) << writer.error();
  TraceWriter& w = **writer;
  w.AddEventType({10, "user_events", "counter",
                  FieldsOf("counter u32 count;char[8] msg;__data_loc char[] path;s64 delta")});
  w.AddEventType({11, "user_events", "MyProvider_L4K1",
                  FieldsOf("MyProvider_L4K1 u8 eventheader_flags;u8 version;u16 id;u16 tag;u8 "
                           "opcode;u8 level")});
  w.AddTask({100, 101, "worker"});
  w.AddTask({200, 200, "client"});

  auto counter = CounterRecord(10, 5, -3);
  w.Write({1000000, 100, 101, 0, 10, 0, counter});
  w.AddTask({100, 100, "server"});  // the main thread's name comes later
  auto request = RequestRecord(11);
  w.Write({2000000, 100, 100, 1, 11, 0, request});
  auto lost = CounterRecord(10, 6, 9);
  w.Write({3000000, 200, 200, 0, 10, 3, lost});
  std::vector<uint8_t> unknown = {99, 0, 0, 0, 0, 0, 0, 0, 0xde, 0xad};
  w.Write({4000000, 200, 200, 0, 99, 0, unknown});
  EXPECT_EQ(w.Finish({2, "mono", "host", 2}), 0);
}

TEST(PerfettoWriterTest, ProtocDecodesTheGoldenTrace) {
  std::string path = ScratchPath("sample.pftrace");
  WriteSampleTrace(path);
  std::string text;
  ASSERT_EQ(DecodeWithProtoc(path, &text), 0) << text;
  if (std::getenv("UDIAG_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(kGolden, std::ios::binary) << text;
  }
  EXPECT_EQ(text, ReadFile(kGolden));
  unlink(path.c_str());
}

TEST(PerfettoWriterTest, ProtocRejectsACutFile) {
  // The oracle can fail: a trace cut inside a packet does not decode.
  std::string path = ScratchPath("cut.pftrace");
  WriteSampleTrace(path);
  std::string bytes = ReadFile(path);
  ASSERT_GT(bytes.size(), 10u);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 3);
  std::string text;
  EXPECT_NE(DecodeWithProtoc(path, &text), 0) << text;
  unlink(path.c_str());
}

TEST(PerfettoWriterTest, EveryPacketIsWholeSoTheFileStreams) {
  std::string path = ScratchPath("stream.pftrace");
  WriteSampleTrace(path);
  std::string bytes = ReadFile(path);
  // Walk 0x0a <varint length> <packet> entries to the exact end.
  size_t at = 0;
  int packets = 0;
  while (at < bytes.size()) {
    ASSERT_EQ(static_cast<uint8_t>(bytes[at++]), 0x0a);
    uint64_t length = 0;
    for (int shift = 0;; shift += 7) {
      uint8_t b = static_cast<uint8_t>(bytes[at++]);
      length |= uint64_t{b & 0x7fu} << shift;
      if (b < 0x80) break;
    }
    at += length;
    ++packets;
  }
  EXPECT_EQ(at, bytes.size());
  // Clock snapshot, 2 process + 3 thread descriptors, the re-sent process
  // descriptor, the start of two cpus' sequences, 4 events, the final loss
  // instant.
  EXPECT_EQ(packets, 1 + 2 + 3 + 1 + 2 + 4 + 1);
  unlink(path.c_str());
}

TEST(PerfettoWriterTest, OpenReportsErrno) {
  auto writer = OpenPerfettoWriter("/nonexistent-dir/x.pftrace");
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.error(), ENOENT);
}

TEST(PerfettoWriterTest, SampledClocksAreCurrent) {
  ClockSample clocks = SampleClocks();
  EXPECT_GT(clocks.monotonic_ns, 0u);
  EXPECT_GE(clocks.boottime_ns + 1000000, clocks.monotonic_ns);  // boottime >= monotonic
}

}  // namespace
}  // namespace udiag::record
