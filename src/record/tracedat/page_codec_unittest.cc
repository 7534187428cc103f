// PageEncoder checked against libtraceevent's kbuffer (the page reader
// trace-cmd uses) and against our own PageDecoder.
extern "C" {  // kbuffer.h has no C++ guard
#include <kbuffer.h>
}

#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "record/tracedat/page_decoder.h"
#include "record/tracedat/page_encoder.h"
#include "record/tracedat/tracedat_layout.h"

namespace udiag::record::tracedat {
namespace {

struct Event {
  uint64_t timestamp;
  std::vector<uint8_t> data;
};

std::vector<uint8_t> Payload(size_t size, uint8_t seed) {
  std::vector<uint8_t> data(size);
  for (size_t i = 0; i < size; ++i) data[i] = static_cast<uint8_t>(seed + i);
  return data;
}

std::vector<uint8_t> Finished(PageEncoder& encoder) {
  std::vector<uint8_t> page(kPageSize, 0xee);
  encoder.FinishInto(page.data());
  return page;
}

struct KbufferDeleter {
  void operator()(kbuffer* kbuf) const { kbuffer_free(kbuf); }
};

// What kbuffer reads from a page: each event's timestamp and bytes.
std::vector<Event> WalkWithKbuffer(std::span<const uint8_t> page, int* missed) {
  std::unique_ptr<kbuffer, KbufferDeleter> kbuf(kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE));
  std::vector<uint8_t> copy(page.begin(), page.end());
  EXPECT_EQ(kbuffer_load_subbuffer(kbuf.get(), copy.data()), 0);
  *missed = kbuffer_missed_events(kbuf.get());
  std::vector<Event> events;
  unsigned long long ts = 0;
  for (void* data = kbuffer_read_event(kbuf.get(), &ts); data != nullptr;
       data = kbuffer_next_event(kbuf.get(), &ts)) {
    const uint8_t* bytes = static_cast<const uint8_t*>(data);
    events.push_back({ts, std::vector<uint8_t>(bytes, bytes + kbuffer_event_size(kbuf.get()))});
  }
  return events;
}

std::vector<uint8_t> PaddedTo4(std::vector<uint8_t> data) {
  data.resize((data.size() + 3) / 4 * 4, 0);
  return data;
}

TEST(PageEncoderTest, KbufferReadsTimestampsExtendsAndBigRecords) {
  constexpr uint64_t kBase = 1000000000123;
  std::vector<Event> input = {
      {kBase, Payload(12, 1)},
      {kBase + 100, Payload(13, 2)},              // padded to 16
      {kBase + 100, Payload(112, 3)},             // largest small encoding
      {kBase + (1ull << 27) + 5, Payload(8, 4)},  // needs a time extend
      {kBase + (1ull << 27) + 6, Payload(160, 5)},  // explicit length
      {kBase + 5000000000ull, Payload(113, 6)},   // 5 s later: extend and explicit length
  };
  PageEncoder encoder;
  for (const Event& event : input) ASSERT_TRUE(encoder.Append(event.timestamp, event.data));
  std::vector<uint8_t> page = Finished(encoder);
  ASSERT_EQ(page.size(), kPageSize);

  int missed = -2;
  std::vector<Event> walked = WalkWithKbuffer(page, &missed);
  EXPECT_EQ(missed, 0);
  ASSERT_EQ(walked.size(), input.size());
  for (size_t i = 0; i < input.size(); ++i) {
    EXPECT_EQ(walked[i].timestamp, input[i].timestamp) << "event " << i;
    EXPECT_EQ(walked[i].data, PaddedTo4(input[i].data)) << "event " << i;
  }

  DecodedPage decoded;
  ASSERT_EQ(DecodePage(page, kLongSize, &decoded), 0);
  EXPECT_EQ(decoded.lost_before, 0u);
  ASSERT_EQ(decoded.records.size(), input.size());
  for (size_t i = 0; i < input.size(); ++i) {
    EXPECT_EQ(decoded.records[i].timestamp, input[i].timestamp);
    EXPECT_EQ(std::vector<uint8_t>(decoded.records[i].data.begin(), decoded.records[i].data.end()),
              PaddedTo4(input[i].data));
  }
}

TEST(PageEncoderTest, LostCountIsStoredTheKernelWay) {
  PageEncoder encoder;
  encoder.MarkLostBefore(17);
  ASSERT_TRUE(encoder.Append(42, Payload(8, 0)));
  std::vector<uint8_t> page = Finished(encoder);
  uint64_t commit = 0;
  std::memcpy(&commit, page.data() + 8, sizeof(commit));
  EXPECT_EQ(commit, 12u | kCommitMissedEvents | kCommitMissedStored);

  int missed = 0;
  EXPECT_EQ(WalkWithKbuffer(page, &missed).size(), 1u);
  EXPECT_EQ(missed, 17);
  DecodedPage decoded;
  ASSERT_EQ(DecodePage(page, kLongSize, &decoded), 0);
  EXPECT_EQ(decoded.lost_before, 17u);
}

TEST(PageEncoderTest, FullPageRefusesAndNextPageStartsClean) {
  PageEncoder encoder;
  uint64_t ts = 1;
  size_t appended = 0;
  while (encoder.Append(ts, Payload(100, 0))) {
    ++appended;
    ts += 10;
  }
  // 104-byte events in 4080 data bytes.
  EXPECT_EQ(appended, (kPageSize - kPageHeaderSize) / 104);
  int missed = 0;
  EXPECT_EQ(WalkWithKbuffer(Finished(encoder), &missed).size(), appended);
  EXPECT_TRUE(encoder.empty());
  // The largest record leaves the 8 bytes a lost count would need: one
  // 4-byte record still fits when no loss is marked.
  EXPECT_TRUE(encoder.Append(ts, Payload(PageEncoder::MaxDataSize(), 0)));
  EXPECT_TRUE(encoder.Append(ts, Payload(4, 0)));
  EXPECT_FALSE(encoder.Append(ts, Payload(4, 0)));
  PageEncoder fresh;
  fresh.MarkLostBefore(1);
  EXPECT_FALSE(fresh.Append(ts, Payload(PageEncoder::MaxDataSize() + 1, 0)));
}

TEST(PageEncoderTest, NextPageKeepsNoBytesOfTheLast) {
  PageEncoder encoder;
  while (encoder.Append(1, Payload(100, 0xff))) {
  }
  Finished(encoder);
  ASSERT_TRUE(encoder.Append(2, Payload(13, 0x11)));  // padded to 16
  std::vector<uint8_t> page = Finished(encoder);
  size_t data_end = kPageHeaderSize + 4 + 13;
  for (size_t i = data_end; i < page.size(); ++i) ASSERT_EQ(page[i], 0) << "byte " << i;
}

TEST(PageEncoderTest, TimestampGoingBackIsClampedNotWrapped) {
  PageEncoder encoder;
  ASSERT_TRUE(encoder.Append(1000, Payload(8, 0)));
  ASSERT_TRUE(encoder.Append(900, Payload(8, 0)));
  DecodedPage decoded;
  ASSERT_EQ(DecodePage(Finished(encoder), kLongSize, &decoded), 0);
  ASSERT_EQ(decoded.records.size(), 2u);
  EXPECT_EQ(decoded.records[1].timestamp, 1000u);
}

TEST(PageEncoderTest, OnlyACommittedReservationIsKept) {
  PageEncoder encoder;
  uint8_t* first = encoder.Reserve(500, 8);
  ASSERT_NE(first, nullptr) << "a small record on an empty page";
  std::memset(first, 0xaa, 8);
  encoder.Commit();
  uint8_t* dropped = encoder.Reserve(600, 12);
  ASSERT_NE(dropped, nullptr);
  std::memset(dropped, 0xbb, 12);  // not committed: the next one takes its place
  uint8_t* second = encoder.Reserve(700, 5);
  ASSERT_EQ(second, dropped);
  std::memset(second, 0xcc, 5);
  encoder.Commit();
  EXPECT_EQ(encoder.Reserve(600, 8), nullptr) << "going back in time takes the general way";
  EXPECT_EQ(encoder.Reserve(700 + (1ull << 27), 8), nullptr) << "so does a delta that needs an extend";
  EXPECT_EQ(encoder.Reserve(800, 113), nullptr) << "and a record with a length word";

  int missed = 0;
  std::vector<Event> walked = WalkWithKbuffer(Finished(encoder), &missed);
  ASSERT_EQ(walked.size(), 2u);
  EXPECT_EQ(walked[0].timestamp, 500u);
  EXPECT_EQ(walked[0].data, std::vector<uint8_t>(8, 0xaa));
  EXPECT_EQ(walked[1].timestamp, 700u);
  EXPECT_EQ(walked[1].data, PaddedTo4(std::vector<uint8_t>(5, 0xcc)));
}

TEST(PageEncoderTest, ReserveRefusesWhatAFullPageCannotTake) {
  PageEncoder encoder;
  size_t kept = 0;
  while (uint8_t* at = encoder.Reserve(kept, 100)) {
    std::memset(at, 1, 100);
    encoder.Commit();
    ++kept;
  }
  EXPECT_EQ(kept, (kPageSize - kPageHeaderSize) / 104);
  EXPECT_FALSE(encoder.Append(kept, Payload(100, 0))) << "Append agrees the page is full";
}

TEST(PageDecoderTest, RejectsMalformedPages) {
  PageEncoder encoder;
  ASSERT_TRUE(encoder.Append(5, Payload(40, 0)));
  std::vector<uint8_t> page = Finished(encoder);
  DecodedPage decoded;

  std::vector<uint8_t> too_long = page;
  uint64_t commit = kPageSize;  // more data than the page holds
  std::memcpy(too_long.data() + 8, &commit, sizeof(commit));
  EXPECT_EQ(DecodePage(too_long, kLongSize, &decoded), EINVAL);

  std::vector<uint8_t> cut = page;
  commit = 20;  // ends inside the event
  std::memcpy(cut.data() + 8, &commit, sizeof(commit));
  EXPECT_EQ(DecodePage(cut, kLongSize, &decoded), EINVAL);

  EXPECT_EQ(DecodePage(std::span(page).first(10), kLongSize, &decoded), EINVAL);
  EXPECT_EQ(DecodePage(page, 3, &decoded), EINVAL);
}

TEST(PageDecoderTest, ReadsAbsoluteTimestampsAndPadding) {
  std::vector<uint8_t> page(kPageSize, 0);
  uint64_t base = 100;
  std::memcpy(page.data(), &base, sizeof(base));
  std::vector<uint32_t> words = {
      kTypeTimeStamp | (7u << kTypeLenBits), 1,  // absolute: (1 << 27) | 7
      2 | (3u << kTypeLenBits), 0xaaaa, 0xbbbb,  // 8 bytes, delta 3
      kTypePadding | (9u << kTypeLenBits), 8, 0,  // a discarded event of 8 bytes
      1 | (1u << kTypeLenBits), 0xcccc,          // 4 bytes, delta 1
  };
  std::memcpy(page.data() + kPageHeaderSize, words.data(), words.size() * 4);
  uint64_t commit = words.size() * 4;
  std::memcpy(page.data() + 8, &commit, sizeof(commit));
  DecodedPage decoded;
  ASSERT_EQ(DecodePage(page, kLongSize, &decoded), 0);
  ASSERT_EQ(decoded.records.size(), 2u);
  EXPECT_EQ(decoded.records[0].timestamp, (1ull << 27) + 7 + 3);
  // Like kbuffer, the padding's delta counts.
  EXPECT_EQ(decoded.records[1].timestamp, (1ull << 27) + 7 + 3 + 9 + 1);
  int missed = 0;
  std::vector<Event> walked = WalkWithKbuffer(page, &missed);
  ASSERT_EQ(walked.size(), 2u);
  EXPECT_EQ(walked[1].timestamp, decoded.records[1].timestamp);
}

}  // namespace
}  // namespace udiag::record::tracedat
