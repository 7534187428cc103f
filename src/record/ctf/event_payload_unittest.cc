// Payload conversion on records that are not laid out the canonical way.

#include "record/ctf/event_payload.h"

#include <gtest/gtest.h>

#include <cstring>

namespace udiag::record::ctf {
namespace {

EventType MakeType(const char* command) {
  schema::EventDescription description;
  EXPECT_EQ(schema::ParseCommand(command, &description), 0);
  return EventType{7, "user_events", description.name, description.fields};
}

std::vector<uint8_t> RecordOfWords(std::initializer_list<uint32_t> words) {
  std::vector<uint8_t> bytes(schema::kCommonHeaderSize);
  for (uint32_t word : words) AppendValue(&bytes, word);
  return bytes;
}

// The payload EncodePayload writes for `record`, which must fit its bound.
std::vector<uint8_t> Encode(const EventType& type, const std::vector<uint8_t>& record) {
  const PayloadPlan plan = PlanPayload(type);
  std::vector<uint8_t> payload(plan.EncodedBound(record.size()));
  const uint8_t* end = EncodePayload(plan, record, payload.data());
  EXPECT_LE(end, payload.data() + payload.size()) << "past EncodedBound";
  payload.resize(end - payload.data());
  return payload;
}

TEST(EventPayloadTest, FixedFieldsBackToBackAreCopiedAsOneRun) {
  const PayloadPlan plan = PlanPayload(MakeType("e u32 a;u64 b;char[4] c;__data_loc char[] s;u16 d;u16 e"));
  ASSERT_EQ(plan.steps.size(), 3u);
  EXPECT_EQ(plan.steps[0].offset, 8u);
  EXPECT_EQ(plan.steps[0].size, 16u) << "a, b and c";
  EXPECT_EQ(plan.steps[1].kind, CtfFieldKind::kDynString);
  EXPECT_EQ(plan.steps[2].offset, 28u);
  EXPECT_EQ(plan.steps[2].size, 4u) << "d and e";
}

TEST(EventPayloadTest, ShortRecordsAndStrayLocWordsGiveZerosAndEmptyData) {
  EventType type = MakeType("e u32 a;__data_loc char[] s;__rel_loc u8[] b;u32 c");
  // s points past the end, b's length runs past it, c is missing.
  std::vector<uint8_t> record = RecordOfWords({5, 60u | 4u << 16, 0u | 200u << 16});
  std::vector<uint8_t> payload = Encode(type, record);
  std::vector<uint8_t> want = {5, 0, 0, 0, /*s*/ 0, /*b length*/ 0, 0, /*c*/ 0, 0, 0, 0};
  EXPECT_EQ(payload, want);
}

// A string and a byte array that both span the whole dynamic area, with
// no NUL in it, still fit the room EncodedBound gives (Encode checks).
TEST(EventPayloadTest, TheLongestDynamicDataFitsTheBound) {
  EventType type = MakeType("e __data_loc char[] s;__data_loc u8[] b");
  std::vector<uint8_t> record = RecordOfWords({16u | 40u << 16, 16u | 40u << 16});
  record.resize(16 + 40, 'x');
  const std::vector<uint8_t> payload = Encode(type, record);
  ASSERT_EQ(payload.size(), 41u + 2u + 40u);
  EXPECT_EQ(payload[40], 0) << "the string ends with a NUL";
  EXPECT_EQ(payload[41], 40) << "the byte array's length";
}

TEST(EventPayloadTest, StringsEndAtTheirFirstNul) {
  EventType type = MakeType("e __data_loc char[] s");
  std::vector<uint8_t> record = RecordOfWords({12u | 4u << 16});
  for (char c : {'a', '\0', 'b', '\0'}) record.push_back(c);
  std::vector<uint8_t> payload = Encode(type, record);
  EXPECT_EQ(payload, (std::vector<uint8_t>{'a', 0}));

  std::vector<uint8_t> rebuilt(schema::kCommonHeaderSize);
  ByteCursor in(payload);
  ASSERT_TRUE(DecodePayload(type, &in, &rebuilt));
  EXPECT_EQ(rebuilt, (std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 0, 0, 12, 0, 2, 0, 'a', 0}));
}

TEST(EventPayloadTest, DecodeRefusesTruncatedPayloads) {
  EventType type = MakeType("e u64 a;__rel_loc u8[] b");
  std::vector<uint8_t> payload = {1, 2, 3, 4, 5, 6, 7, 8, /*length*/ 3, 0, 0xaa, 0xbb, 0xcc};
  for (size_t size = 0; size <= payload.size(); ++size) {
    std::vector<uint8_t> record(schema::kCommonHeaderSize);
    ByteCursor in(std::span<const uint8_t>(payload).first(size));
    EXPECT_EQ(DecodePayload(type, &in, &record), size == payload.size()) << size;
  }
}

TEST(EventPayloadTest, DecodeRefusesDataBeyondTheLocWordRange) {
  EventType type = MakeType("e __data_loc u8[] b");
  std::vector<uint8_t> payload = {0xff, 0xff};
  payload.resize(2 + 0xffff, 0);
  std::vector<uint8_t> record(schema::kCommonHeaderSize);
  ByteCursor in(payload);
  EXPECT_TRUE(DecodePayload(type, &in, &record));  // offset 12, length 0xffff: fits
  type.fields[0].offset = 0x10000 - 4;             // the data would start at 0x10000
  type.fields[0].kind = schema::FieldKind::kDataLoc;
  ByteCursor again(payload);
  EXPECT_FALSE(DecodePayload(type, &again, &record));
}

}  // namespace
}  // namespace udiag::record::ctf
