// What RecordingSink hands a writer that keeps no pages (CTF) when the
// stream brings pages: each page's records, with their process, cpu and
// the page's losses, in time order within each cpu (not across cpus, as
// the daemon merges pages per cpu only).

#include "cli/recording_sink.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "record/tracedat/page_encoder.h"

namespace udiag::cli {
namespace {

struct Written {
  uint64_t timestamp;
  uint32_t pid, tid;
  uint16_t cpu;
  uint32_t event_id;
  uint64_t lost_before;
  uint8_t first_payload_byte;
};

class RecordsOnlyWriter : public record::TraceWriter {
 public:
  void AddEventType(const record::EventType&) override {}
  void AddTask(const record::Task&) override {}
  void Write(const record::Record& r) override {
    written.push_back({r.timestamp, r.pid, r.tid, r.cpu, r.event_id, r.lost_before, r.data[8]});
  }
  int Finish(const record::TraceInfo&) override { return 0; }
  std::vector<Written> written;
};

using PageBytes = std::array<uint8_t, record::tracedat::kPageSize>;
// A record's data: the common header and one payload byte.
using RecordData = std::array<uint8_t, 12>;

// A checked page as the daemon sends it: `records` (times and data), after
// `lost` lost events, all of type `only_type` (or 0: of several).
PageBytes PageOf(const std::vector<std::pair<uint64_t, RecordData>>& records, uint64_t lost,
                 uint32_t only_type, consumer::PageCounts* counts) {
  record::tracedat::PageEncoder encoder;
  if (lost) encoder.MarkLostBefore(lost);
  for (const auto& [time, data] : records) EXPECT_TRUE(encoder.Append(time, data));
  *counts = {static_cast<uint32_t>(records.size()), only_type, encoder.data_bytes(), lost};
  PageBytes page;
  encoder.FinishInto(page.data());
  return page;
}

RecordData Data(uint16_t type, uint32_t tid, uint8_t payload) {
  RecordData data{};
  std::memcpy(data.data(), &type, sizeof(type));
  std::memcpy(data.data() + 4, &tid, sizeof(tid));
  data[8] = payload;
  return data;
}

// Records of `tid` (type 10, one payload byte each, counting up), stamped
// `times`, after `lost` lost events.
PageBytes Page(uint32_t tid, const std::vector<uint64_t>& times, uint64_t lost,
               consumer::PageCounts* counts) {
  std::vector<std::pair<uint64_t, RecordData>> records;
  for (uint64_t time : times) records.emplace_back(time, Data(10, tid, static_cast<uint8_t>(records.size())));
  return PageOf(records, lost, 10, counts);
}

TEST(RecordingSinkTest, PagesReachARecordsWriterAsTheirRecordsInTimeOrderPerCpu) {
  RecordsOnlyWriter writer;
  RecordingSink sink(&writer);
  sink.OnEventType({.id = 10, .system = "user_events", .name = "tick", .fields = {}});
  sink.OnTask({.pid = 100, .tid = 101, .comm = "worker"});
  consumer::PageCounts counts;
  auto later = Page(101, {5000, 6000}, 3, &counts);
  ASSERT_TRUE(sink.OnPage(1, later, counts));
  auto earlier_on_other_cpu = Page(101, {1000, 2000}, 0, &counts);
  ASSERT_TRUE(sink.OnPage(0, earlier_on_other_cpu, counts));
  auto back_in_time = Page(202, {5500}, 0, &counts);  // on cpu 1, before its last record
  ASSERT_TRUE(sink.OnPage(1, back_in_time, counts));

  ASSERT_EQ(writer.written.size(), 5u);
  const Written& first = writer.written[0];
  EXPECT_EQ(first.timestamp, 5000u);
  EXPECT_EQ(first.pid, 100u);
  EXPECT_EQ(first.tid, 101u);
  EXPECT_EQ(first.cpu, 1);
  EXPECT_EQ(first.event_id, 10u);
  EXPECT_EQ(first.lost_before, 3u) << "the page's losses go before its first record";
  EXPECT_EQ(writer.written[1].lost_before, 0u);
  EXPECT_EQ(writer.written[1].first_payload_byte, 1);
  EXPECT_EQ(writer.written[2].timestamp, 1000u) << "another cpu's time is not restamped";
  EXPECT_EQ(writer.written[2].cpu, 0);
  EXPECT_EQ(writer.written[4].timestamp, 6000u) << "restamped: its cpu's time went back";
  EXPECT_EQ(writer.written[4].pid, 202u) << "an unannounced thread is its own process";
  EXPECT_EQ(sink.restamped(), 1u);
  EXPECT_EQ(sink.events(), 5u);
  EXPECT_EQ(sink.lost(), 3u);
  EXPECT_EQ(sink.cpus(), 2u);
}

TEST(RecordingSinkTest, APageRecordShorterThanACommonHeaderFailsTheStream) {
  RecordsOnlyWriter writer;
  RecordingSink sink(&writer);
  record::tracedat::PageEncoder encoder;
  const std::array<uint8_t, 4> short_record{10, 0, 0, 0};
  ASSERT_TRUE(encoder.Append(1000, short_record));
  PageBytes page;
  encoder.FinishInto(page.data());
  EXPECT_FALSE(sink.OnPage(0, page, {1, 10, 8, 0}));
  EXPECT_TRUE(writer.written.empty());
}

// A trace.dat whose pages the daemon writes itself: the sink only counts
// them, and hears which are on disk.
class DaemonWrittenPages : public RecordsOnlyWriter {
 public:
  bool PagesOnDisk(uint16_t, uint64_t) override { return true; }
};

TEST(RecordingSinkTest, EventsOfPagesTheDaemonNeverWroteAreCountedLostNotKept) {
  DaemonWrittenPages writer;
  RecordingSink sink(&writer);
  sink.OnEventType({.id = 10, .system = "user_events", .name = "tick", .fields = {}});
  sink.OnEventType({.id = 11, .system = "user_events", .name = "tock", .fields = {}});
  consumer::PageCounts counts;
  auto written = Page(101, {1000, 2000, 3000}, 0, &counts);
  const uint64_t written_bytes = counts.data_bytes;
  ASSERT_TRUE(sink.OnFilePage(0, written, counts));
  auto after = Page(101, {4000, 5000}, 1, &counts);
  ASSERT_TRUE(sink.OnFilePage(0, after, counts));
  auto mixed =
      PageOf({{1000, Data(10, 101, 0)}, {1001, Data(11, 101, 1)}, {1002, Data(11, 101, 2)}}, 0, 0, &counts);
  ASSERT_TRUE(sink.OnFilePage(1, mixed, counts));
  ASSERT_TRUE(sink.OnPagesOnDisk(0, record::tracedat::kPageSize));  // cpu 0's first page
  EXPECT_EQ(sink.events(), 8u);

  EXPECT_EQ(sink.CountUnwrittenAsLost(), 5u);
  EXPECT_EQ(sink.events(), 3u) << "what is in the file";
  EXPECT_EQ(sink.bytes(), written_bytes);
  EXPECT_EQ(sink.lost(), 6u) << "the page's own loss and the five never written";
  const std::string summary = sink.Summary();
  EXPECT_NE(summary.find("user_events:tick             3\n"), std::string::npos) << summary;
  EXPECT_NE(summary.find("user_events:tock             0\n"), std::string::npos) << summary;
  EXPECT_EQ(sink.CountUnwrittenAsLost(), 0u) << "counted once";
}

}  // namespace
}  // namespace udiag::cli
