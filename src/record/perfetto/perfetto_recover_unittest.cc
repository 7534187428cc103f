#include "record/perfetto/perfetto_recover.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "record/perfetto/perfetto_test_support.h"
#include "record/perfetto/perfetto_writer.h"

namespace udiag::record {
namespace {

using testing::DecodeWithProtoc;
using testing::ReadFile;
using testing::ScratchPath;

// A trace of 100 events "n u32 i", finished: its bytes.
std::string WholeTrace(const std::string& path) {
  auto writer = OpenPerfettoWriter(path, ClockSample{5000, 7000});
  EXPECT_TRUE(writer.ok());
  schema::EventDescription event;
  EXPECT_EQ(schema::ParseCommand("n u32 i", &event), 0);
  (*writer)->AddEventType({10, "user_events", "n", event.fields});
  (*writer)->AddTask({100, 100, "app"});
  for (uint32_t i = 0; i < 100; ++i) {
    std::vector<uint8_t> record = {10, 0, 0, 0, 100, 0, 0, 0};
    for (int b = 0; b < 4; ++b) record.push_back(static_cast<uint8_t>(i >> (8 * b)));
    (*writer)->Write({1000 + i, 100, 100, 0, 10, 0, record});
  }
  EXPECT_EQ((*writer)->Finish({1, "mono", "host", 0}), 0);
  return ReadFile(path);
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Cut anywhere (as a kill in the middle of a write leaves it), the file
// loses only its torn last packet, and then protoc decodes it.
TEST(PerfettoRecoverTest, ATornLastPacketIsCutOff) {
  const std::string path = ScratchPath("torn.pftrace");
  const std::string whole = WholeTrace(path);
  ASSERT_GT(whole.size(), 1000u);
  for (size_t keep : {whole.size() - 1, whole.size() - 5, whole.size() / 2, size_t{3}}) {
    WriteBytes(path, whole.substr(0, keep));
    std::string text;
    ASSERT_NE(DecodeWithProtoc(path, &text), 0) << "torn at " << keep << ": the oracle must refuse it";
    uint64_t cut = 0;
    ASSERT_EQ(CutTornPerfettoPacket(path, &cut), 0) << keep;
    const std::string kept = ReadFile(path);
    EXPECT_EQ(kept.size() + cut, keep);
    EXPECT_EQ(kept, whole.substr(0, kept.size()));
    EXPECT_EQ(DecodeWithProtoc(path, &text), 0) << "torn at " << keep << ": " << text;
  }
  unlink(path.c_str());
}

TEST(PerfettoRecoverTest, AWholeTraceIsLeftAsItIs) {
  const std::string path = ScratchPath("whole.pftrace");
  const std::string whole = WholeTrace(path);
  uint64_t cut = 1;
  ASSERT_EQ(CutTornPerfettoPacket(path, &cut), 0);
  EXPECT_EQ(cut, 0u);
  EXPECT_EQ(ReadFile(path), whole);
  unlink(path.c_str());
}

// A file that is not a run of packets (another format, or damaged before
// its end) is refused and left alone.
TEST(PerfettoRecoverTest, AnythingElseIsRefusedAndLeftAlone) {
  const std::string path = ScratchPath("other.pftrace");
  const std::string other = "\x17\x08\x44tracing6";
  for (const std::string& bytes : {other, std::string()}) {
    WriteBytes(path, bytes);
    uint64_t cut = 0;
    EXPECT_EQ(CutTornPerfettoPacket(path, &cut), EINVAL);
    EXPECT_EQ(ReadFile(path), bytes);
  }
  std::string bad_tag = WholeTrace(path);
  bad_tag += std::string("\x12\x01x", 3);  // a whole field, but not a packet
  WriteBytes(path, bad_tag);
  uint64_t cut = 0;
  EXPECT_EQ(CutTornPerfettoPacket(path, &cut), EINVAL);
  EXPECT_EQ(ReadFile(path), bad_tag);
  EXPECT_EQ(CutTornPerfettoPacket(ScratchPath("missing.pftrace"), &cut), ENOENT);
  unlink(path.c_str());
}

}  // namespace
}  // namespace udiag::record
