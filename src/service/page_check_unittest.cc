#include "service/page_check.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <map>
#include <vector>

#include "record/tracedat/page_decoder.h"
#include "service/event_registry.h"

namespace udiag::service {
namespace {

constexpr uint32_t kTid = 4242;

// Builds a producer's page by hand, as ring_layout.h describes it, so that
// tests can also build what no honest producer writes.
class PageBuilder {
 public:
  explicit PageBuilder(uint64_t timestamp, uint16_t cpu = 1) : time_(timestamp) {
    page_.fill(0xAB);  // stale bytes after the events must not survive
    const ring::PageHeader header{timestamp, uint64_t{cpu} << 32};
    std::memcpy(page_.data(), &header, sizeof(header));
  }
  // An event of `type` at `timestamp`, its payload padded to whole words.
  PageBuilder& Event(uint16_t type, uint64_t timestamp, std::vector<uint8_t> payload, uint32_t pid = 7) {
    uint64_t delta = timestamp - time_;
    time_ = timestamp;
    if (delta > ring::kMaxTimeDelta) {
      Word(ring::kTypeTimeExtend | static_cast<uint32_t>(delta & ring::kMaxTimeDelta) << ring::kTypeLenBits);
      Word(static_cast<uint32_t>(delta >> ring::kTimeDeltaBits));
      delta = 0;
    }
    payload.resize((payload.size() + 3) & ~size_t{3});
    const auto data = static_cast<uint32_t>(ring::kCommonHeaderBytes + payload.size());
    if (data <= ring::kMaxSmallData) {
      Word(data / 4 | static_cast<uint32_t>(delta) << ring::kTypeLenBits);
    } else {
      Word(static_cast<uint32_t>(delta) << ring::kTypeLenBits);
      Word(data + 4);
    }
    Word(type | 0x0300u << 16);  // flags and preempt count a producer should not set
    Word(pid);
    for (uint8_t byte : payload) page_[sizeof(ring::PageHeader) + used_++] = byte;
    return *this;
  }
  PageBuilder& Word(uint32_t word) {
    std::memcpy(page_.data() + sizeof(ring::PageHeader) + used_, &word, 4);
    used_ += 4;
    return *this;
  }
  // Closes the page: its commit says `bytes` (default: what was written).
  uint8_t* Close(uint32_t bytes = UINT32_MAX) {
    uint64_t commit;
    std::memcpy(&commit, page_.data() + 8, sizeof(commit));
    commit |= bytes == UINT32_MAX ? used_ : bytes;
    std::memcpy(page_.data() + 8, &commit, sizeof(commit));
    return page_.data();
  }
  uint32_t used() const { return used_; }

 private:
  alignas(8) std::array<uint8_t, ring::kRingPageSize> page_{};
  uint32_t used_ = 0;
  uint64_t time_;
};

// A checked page's records, as a trace.dat reader sees them.
std::vector<record::tracedat::PageRecord> RecordsOf(const uint8_t* page) {
  uint64_t lost = 0;
  std::vector<record::tracedat::PageRecord> records;
  EXPECT_EQ(record::tracedat::ForEachPageRecord({page, ring::kRingPageSize}, 8, &lost,
                                                [&](const auto& record) { records.push_back(record); }),
            0);
  return records;
}

class PageCheckTest : public ::testing::Test {
 protected:
  PageCheckTest() {
    small_.id = 10;
    small_.desc.min_size = 4;
    text_.id = 11;
    text_.desc.min_size = 4;
    text_.locs.push_back({8, /*relative=*/1, /*is_string=*/1});  // a __rel_loc char[] first
    events_ = {{10, &small_}, {11, &text_}};
  }
  bool Check(uint8_t* page, uint64_t latest = 1'000'000, uint64_t line_tsc = 0) {
    auto event_of = [&](uint16_t id) -> const service::Event* {
      auto it = events_.find(id);
      return it == events_.end() ? nullptr : it->second;
    };
    // A clock at 2 ns per tick, 1000 ns ahead, along a line from `line_tsc`.
    const base::TscClock::Line line{line_tsc, 1000 + 2 * line_tsc, uint64_t{2} << 32};
    return CheckPage(page, kTid, latest, event_of, line, &checked_);
  }

  service::Event small_, text_;
  std::map<uint16_t, const service::Event*> events_;
  CheckedPage checked_;
};

TEST_F(PageCheckTest, AnHonestPageBecomesTheTraceDatPageOfItsEvents) {
  PageBuilder builder(100);
  builder.Event(10, 100, {1, 2, 3, 4}).Event(10, 150, {5, 6, 7, 8, 9}).Event(10, 150 + (1u << 28), {1, 1, 1, 1});
  uint8_t* page = builder.Close();
  ASSERT_TRUE(Check(page, 1u << 30));
  EXPECT_EQ(checked_.events, 3u);
  EXPECT_EQ(checked_.only_type, 10u);
  ASSERT_EQ(checked_.type_count, 1u);
  EXPECT_EQ(checked_.data_bytes, builder.used());

  const std::vector<record::tracedat::PageRecord> records = RecordsOf(page);
  ASSERT_EQ(records.size(), 3u);
  // Times in ns, the long gap through a time extend.
  EXPECT_EQ(records[0].timestamp, 1200u);
  EXPECT_EQ(records[1].timestamp, 1300u);
  EXPECT_EQ(records[2].timestamp, 1300u + (uint64_t{1} << 29));
  // common_pid is the ring's thread, flags and preempt count 0; padding stays zeros.
  const std::vector<uint8_t> second(records[1].data.begin(), records[1].data.end());
  EXPECT_EQ(second, (std::vector<uint8_t>{10, 0, 0, 0, 0x92, 0x10, 0, 0, 5, 6, 7, 8, 9, 0, 0, 0}));
  // Nothing of the producer's is left after the events.
  for (uint32_t i = sizeof(ring::PageHeader) + checked_.data_bytes; i < ring::kRingPageSize; ++i) {
    ASSERT_EQ(page[i], 0) << i;
  }
}

// The usual page, events of one type and size back to back, is checked
// by CheckEventsOfOneSize: its result must be what the walk from event to
// event makes of a page.
TEST_F(PageCheckTest, APageOfOneTypeAndSizeBecomesTheSameTraceDatPage) {
  PageBuilder builder(100);
  uint64_t time = 100;
  std::vector<uint64_t> times;
  for (uint8_t i = 0; i < 50; ++i) {
    builder.Event(10, time, {i, 2, 3, 4});
    times.push_back(1000 + 2 * time);
    time += 1 + i * 1000;
  }
  uint8_t* page = builder.Close();
  ASSERT_TRUE(Check(page, time));
  EXPECT_EQ(checked_.events, 50u);
  EXPECT_EQ(checked_.only_type, 10u);
  ASSERT_EQ(checked_.type_count, 1u);
  EXPECT_EQ(checked_.types[0], 10);
  EXPECT_EQ(checked_.first_ns, 1200u);
  EXPECT_EQ(checked_.span_ns, times.back() - times.front());

  const std::vector<record::tracedat::PageRecord> records = RecordsOf(page);
  ASSERT_EQ(records.size(), 50u);
  for (uint8_t i = 0; i < 50; ++i) {
    EXPECT_EQ(records[i].timestamp, times[i]) << int{i};
    const std::vector<uint8_t> data(records[i].data.begin(), records[i].data.end());
    EXPECT_EQ(data, (std::vector<uint8_t>{10, 0, 0, 0, 0x92, 0x10, 0, 0, i, 2, 3, 4})) << int{i};
  }
}

// A page whose events are all of one size but not one type is left for
// the walk untouched: it must still read the producer's times.
TEST_F(PageCheckTest, APageOfOneSizeAndTwoTypesIsCheckedEventByEvent) {
  PageBuilder builder(0);
  builder.Event(10, 10, {1, 2, 3, 4}).Event(10, 20, {1, 2, 3, 4}).Event(11, 30, {0, 0, 0, 0});
  uint8_t* page = builder.Close();
  ASSERT_TRUE(Check(page));
  EXPECT_EQ(checked_.type_count, 2u);
  std::vector<uint64_t> times;
  for (const auto& record : RecordsOf(page)) times.push_back(record.timestamp);
  EXPECT_EQ(times, (std::vector<uint64_t>{1020, 1040, 1060}));
}

TEST_F(PageCheckTest, ALaterEventOfOneSizedPageCanRefuseIt) {
  PageBuilder too_far(0);  // the last delta is too large once in ns (2 ns a tick)
  too_far.Event(10, 1, {1, 2, 3, 4}).Event(10, 1 + ring::kMaxTimeDelta, {1, 2, 3, 4});
  EXPECT_FALSE(Check(too_far.Close(), 1u << 30));

  PageBuilder bad_loc(0);
  bad_loc.Event(11, 1, {0, 0, 2, 0, 'x', 0, 0, 0}).Event(11, 2, {0, 0, 40, 0, 'x', 0, 0, 0});
  EXPECT_FALSE(Check(bad_loc.Close()));

  PageBuilder late(0);
  late.Event(10, 1, {1, 2, 3, 4}).Event(10, 6000, {1, 2, 3, 4});
  EXPECT_FALSE(Check(late.Close(), 5999));

  PageBuilder not_allowed(0);
  not_allowed.Event(12, 1, {1, 2, 3, 4}).Event(12, 2, {1, 2, 3, 4});
  EXPECT_FALSE(Check(not_allowed.Close()));
}

TEST_F(PageCheckTest, SeveralTypesAreListedOnce) {
  PageBuilder builder(0);
  builder.Event(10, 1, {1, 2, 3, 4}).Event(11, 2, {0, 0, 2, 0, 'x', 0, 0, 0}).Event(10, 3, {1, 2, 3, 4});
  ASSERT_TRUE(Check(builder.Close()));
  EXPECT_EQ(checked_.only_type, 0u);
  ASSERT_EQ(checked_.type_count, 2u);
  EXPECT_EQ(checked_.types[0], 10);
  EXPECT_EQ(checked_.types[1], 11);
}

TEST_F(PageCheckTest, AnEventThatMayNotBeKeptWholeRefusesThePage) {
  PageBuilder builder(0);
  builder.Event(10, 1, {1, 2, 3, 4}).Event(12, 2, {1, 2, 3, 4});
  EXPECT_FALSE(Check(builder.Close()));
}

TEST_F(PageCheckTest, ATimeLaterThanNowRefusesThePage) {
  PageBuilder early(0);
  early.Event(10, 5000, {1, 2, 3, 4});
  EXPECT_FALSE(Check(early.Close(), 4999));
  PageBuilder header_late(5000);
  header_late.Event(10, 5000, {1, 2, 3, 4});
  EXPECT_FALSE(Check(header_late.Close(), 4999));
}

// The line is drawn from the page's start as the ring showed it; a copy
// that starts earlier (the producer rewrote it meanwhile) would convert
// below the line's start, wrapping to a time far ahead.
TEST_F(PageCheckTest, AStartBeforeItsLineRefusesThePage) {
  PageBuilder at_line(200);
  at_line.Event(10, 200, {1, 2, 3, 4});
  EXPECT_TRUE(Check(at_line.Close(), 1'000'000, 200));
  EXPECT_EQ(checked_.first_ns, 1400u);
  PageBuilder before(199);
  before.Event(10, 199, {1, 2, 3, 4});
  EXPECT_FALSE(Check(before.Close(), 1'000'000, 200));
}

TEST_F(PageCheckTest, APayloadShorterThanTheStaticFieldsRefusesThePage) {
  PageBuilder builder(0);
  builder.Event(10, 1, {});
  EXPECT_FALSE(Check(builder.Close()));
}

TEST_F(PageCheckTest, ALocWordPointingOutOfItsRecordRefusesThePage) {
  PageBuilder fine(0);
  fine.Event(11, 1, {0, 0, 2, 0, 'x', 0, 0, 0});  // 2 bytes from just after the word: "x\0"
  EXPECT_TRUE(Check(fine.Close()));
  PageBuilder beyond(0);
  beyond.Event(11, 1, {0, 0, 40, 0, 'x', 0, 0, 0});
  EXPECT_FALSE(Check(beyond.Close()));
}

TEST_F(PageCheckTest, MalformedEventsAndCommitsRefuseThePage) {
  PageBuilder padding(0);
  padding.Event(10, 1, {1, 2, 3, 4}).Word(29).Word(0);  // type_len 29: padding, which producers never write
  EXPECT_FALSE(Check(padding.Close()));

  PageBuilder cut(0);
  cut.Event(10, 1, {1, 2, 3, 4});
  EXPECT_FALSE(Check(cut.Close(cut.used() - 4))) << "an event crossing the commit";

  PageBuilder too_long(0);
  too_long.Event(10, 1, {1, 2, 3, 4});
  EXPECT_FALSE(Check(too_long.Close(ring::kPageRoom + 4))) << "no room left for a lost count";

  PageBuilder empty(0);
  EXPECT_FALSE(Check(empty.Close())) << "nothing to keep";

  PageBuilder explicit_short(0);
  explicit_short.Word(0).Word(4);  // an explicit length with no data
  EXPECT_FALSE(Check(explicit_short.Close()));
}

TEST_F(PageCheckTest, MoreTypesThanAPageListsRefuseThePage) {
  service::Event many[CheckedPage::kMaxTypes + 1];
  PageBuilder builder(0);
  for (uint16_t i = 0; i <= CheckedPage::kMaxTypes; ++i) {
    many[i].id = 20 + i;
    events_[20 + i] = &many[i];
    builder.Event(20 + i, i, {1, 2, 3, 4});
  }
  EXPECT_FALSE(Check(builder.Close()));
}

}  // namespace
}  // namespace udiag::service
