#include "trigger/synth_event.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace udiag::trigger {
namespace {

TEST(SynthEvent, ParsesTheKernelsDefinitionAndListsIt) {
  schema::EventDescription e;
  ASSERT_EQ(ParseSynthEvent("wakeup_latency  u64 lat; pid_t pid;unsigned int prio\n", &e), 0);
  EXPECT_EQ(e.name, "wakeup_latency");
  ASSERT_EQ(e.fields.size(), 3u);
  // Every field in a u64 slot, sized by its type.
  EXPECT_EQ(e.fields[1].offset, 16u);
  EXPECT_EQ(e.fields[1].size, 4u);
  EXPECT_TRUE(e.fields[1].is_signed);
  EXPECT_FALSE(e.fields[2].is_signed);
  EXPECT_EQ(SynthEventLine(e), "wakeup_latency\tu64 lat; pid_t pid; unsigned int prio\n");
  EXPECT_EQ(SynthPrintFmt(e.fields), "\"lat=%llu, pid=%d, prio=%u\", REC->lat, REC->pid, REC->prio");
}

TEST(SynthEvent, Errors) {
  schema::EventDescription e;
  for (std::string_view bad :
       {"", "name", "1x u64 a", "x u65 a", "x u64", "x u64 a; u32 a", "x char[16] s", "x u64 a-b"}) {
    EXPECT_EQ(ParseSynthEvent(bad, &e), EINVAL) << bad;
  }
}

TEST(SynthEvent, RecordAndTraceText) {
  schema::EventDescription e;
  ASSERT_EQ(ParseSynthEvent("lat u64 lat; pid_t pid", &e), 0);
  const uint64_t values[] = {1234, static_cast<uint64_t>(-5)};
  std::vector<uint8_t> record = SynthRecord(42, 77, e.fields, values);
  ASSERT_EQ(record.size(), 24u);
  EXPECT_EQ(record[0], 42);
  EXPECT_EQ(record[4], 77);
  EXPECT_EQ(RenderSynthFields(e.fields, record), "lat=1234 pid=-5");
  record.resize(12);  // untrusted lengths read as zero
  EXPECT_EQ(RenderSynthFields(e.fields, record), "lat=0 pid=0");
}

}  // namespace
}  // namespace udiag::trigger
