// IntegerEventPlan against the packet it stands in for: for every integer
// type and size, values at the varint boundaries, any thread and time, the
// bytes it writes must be AppendFramed(EventPacket)'s, within max_bytes().

#include "record/perfetto/event_packet.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>

#include "record/perfetto/perfetto_fields.h"
#include "schema/event_description.h"

namespace udiag::record::perfetto {
namespace {

EventType TypeOf(uint32_t id, const std::string& command) {
  schema::EventDescription event;
  EXPECT_EQ(schema::ParseCommand(command, &event), 0) << command;
  return {id, "user_events", event.name, event.fields};
}

// What plan.Write puts down for `record` ("refused" for null), checking
// that it stays within max_bytes().
std::string Planned(const IntegerEventPlan& plan, const Record& record) {
  std::string room(plan.max_bytes() + 1, '\xa5');
  const char* end = plan.Write(record, room.data());
  EXPECT_EQ(room.back(), '\xa5') << "wrote past max_bytes()";
  if (end == nullptr) {
    EXPECT_EQ(room, std::string(room.size(), '\xa5')) << "refused, yet wrote";
    return "refused";
  }
  EXPECT_LE(end - room.data(), static_cast<ptrdiff_t>(plan.max_bytes()));
  return room.substr(0, end - room.data());
}

// A record of `type` with random field values, drawn mostly from the
// varint boundaries and the extremes of each size.
std::vector<uint8_t> RandomRecord(const EventType& type, std::mt19937_64& random) {
  static constexpr uint64_t kEdges[] = {0,
                                        1,
                                        0x7f,
                                        0x80,
                                        0x3fff,
                                        0x4000,
                                        0xff,
                                        0x7fff,
                                        0x8000,
                                        0xffff,
                                        0x7fffffff,
                                        0x80000000,
                                        0xffffffff,
                                        0x7fffffffffffffff,
                                        0x8000000000000000,
                                        0xffffffffffffffff};
  size_t bytes = 8;
  for (const schema::Field& field : type.fields) bytes = std::max<size_t>(bytes, field.offset + field.size);
  std::vector<uint8_t> record(bytes);
  const uint16_t id = static_cast<uint16_t>(type.id);
  std::memcpy(record.data(), &id, sizeof(id));
  for (const schema::Field& field : type.fields) {
    const uint64_t value = random() % 3 == 0 ? random() : kEdges[random() % std::size(kEdges)];
    std::memcpy(record.data() + field.offset, &value, field.size);  // little-endian: its low bytes
  }
  return record;
}

std::string GeneralPacket(const EventType& type, const Record& record) {
  std::string out;
  ProtoMessage packet = EventPacket(&type, record);
  AppendFramed(&packet, EventSequenceId(record.cpu), &out);
  return out;
}

TEST(IntegerEventPlanTest, AppendsWhatTheGeneralPacketHolds) {
  const EventType types[] = {
      TypeOf(10, "flood u64 seq;u64 a;u64 b;u64 c"),
      TypeOf(11, "sizes s8 a;u8 b;s16 c;u16 d;s32 e;u32 f;s64 g;u64 h"),
      TypeOf(12, "kernel_names int i;unsigned int u;short s;unsigned short us;char c;unsigned char uc"),
      TypeOf(13, "none"),
      // Names long enough that an annotation's length takes two bytes, and
      // that the category and name are over 64 bytes.
      TypeOf(14, std::string(100, 'e') + " u16 " + std::string(130, 'f') + ";s64 " + std::string(60, 'g')),
  };
  std::mt19937_64 random(42);
  for (const EventType& type : types) {
    auto plan = IntegerEventPlan::For(type);
    ASSERT_NE(plan, nullptr) << type.name;
    for (int i = 0; i < 2000; ++i) {
      std::vector<uint8_t> data = RandomRecord(type, random);
      const uint64_t times[] = {0, 1, random(), UINT64_MAX};
      const uint32_t tids[] = {1, 4242, static_cast<uint32_t>(random()), UINT32_MAX};
      const Record record{times[i % 4], 100, tids[i / 4 % 4], static_cast<uint16_t>(i % 3), type.id, 0, data};
      ASSERT_EQ(Planned(*plan, record), GeneralPacket(type, record)) << type.name << " record " << i;
    }
  }
}

TEST(IntegerEventPlanTest, LeavesLossesAndShortRecordsToTheGeneralPacket) {
  const EventType type = TypeOf(10, "flood u64 seq;u64 a;u64 b;u64 c");
  auto plan = IntegerEventPlan::For(type);
  ASSERT_NE(plan, nullptr);
  std::vector<uint8_t> data(8 + 32);
  EXPECT_EQ(Planned(*plan, {5, 1, 1, 0, 10, /*lost_before=*/3, data}), "refused");
  data.pop_back();
  EXPECT_EQ(Planned(*plan, {5, 1, 1, 0, 10, 0, data}), "refused");
}

TEST(IntegerEventPlanTest, OnlyTypesOfIntegersHaveOne) {
  EXPECT_EQ(IntegerEventPlan::For(TypeOf(10, "text u32 n;char[8] msg")), nullptr);
  EXPECT_EQ(IntegerEventPlan::For(TypeOf(11, "path __data_loc char[] p")), nullptr);
  EXPECT_EQ(IntegerEventPlan::For(TypeOf(12,
                                         "MyProvider_L4K1 u8 eventheader_flags;u8 version;u16 id;u16 tag;u8 "
                                         "opcode;u8 level")),
            nullptr)
      << "an EventHeader event decodes its own fields";
}

}  // namespace
}  // namespace udiag::record::perfetto
