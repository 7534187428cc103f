#include "ipc/protocol.h"

#include <gtest/gtest.h>

namespace udiag::ipc {
namespace {

template <typename T>
T RoundTrip(const T& in, MsgType type) {
  Encoder e = StartMessage(type, 7);
  in.Encode(e);
  MessageHeader header;
  Decoder d({});
  EXPECT_TRUE(SplitMessage(e.bytes(), &header, &d));
  EXPECT_EQ(header.type, type);
  EXPECT_EQ(header.seq, 7u);
  T out;
  EXPECT_TRUE(out.Decode(d));
  return out;
}

TEST(ProtocolTest, RegisterRoundTrips) {
  RegisterRequest in{3, 0x7fff0000, 31, 4, "test u32 a"};
  RegisterRequest out = RoundTrip(in, MsgType::kRegister);
  EXPECT_EQ(out.flags, 3);
  EXPECT_EQ(out.enable_addr, 0x7fff0000u);
  EXPECT_EQ(out.enable_bit, 31);
  EXPECT_EQ(out.enable_size, 4);
  EXPECT_EQ(out.command, "test u32 a");
}

TEST(ProtocolTest, EventInfoRoundTrips) {
  RegisterReply in;
  in.write_index = 2;
  in.status = 1;
  in.event = {1001, 12, {{8, 1, 1}, {12, 0, 0}}};
  RegisterReply out = RoundTrip(in, MsgType::kReply);
  EXPECT_EQ(out.write_index, 2u);
  EXPECT_EQ(out.event.id, 1001u);
  ASSERT_EQ(out.event.locs.size(), 2u);
  EXPECT_EQ(out.event.locs[1].offset, 12);
  EXPECT_EQ(out.event.locs[0].relative, 1);
}

TEST(ProtocolTest, HelloReplyRoundTripsWithTheRingLimit) {
  HelloReply in{1000, 4096, 1, 4 << 20, 16 << 20};
  HelloReply out = RoundTrip(in, MsgType::kReply);
  EXPECT_EQ(out.first_event_id, 1000u);
  EXPECT_EQ(out.ring_bytes, 4u << 20);
  EXPECT_EQ(out.ring_max_bytes, 16u << 20);
}

// A daemon from before growing rings sends four words: its rings never grow.
TEST(ProtocolTest, HelloReplyWithoutTheRingLimitKeepsRingsAtTheirSize) {
  Encoder e = StartMessage(MsgType::kReply, 1);
  e.Put<uint32_t>(1000).Put<uint32_t>(4096).Put<uint32_t>(1).Put<uint32_t>(4 << 20);
  MessageHeader header;
  Decoder d({});
  ASSERT_TRUE(SplitMessage(e.bytes(), &header, &d));
  HelloReply out;
  ASSERT_TRUE(out.Decode(d));
  EXPECT_EQ(out.ring_max_bytes, 4u << 20);
}

TEST(ProtocolTest, HelloRoundTripsWithTheRingVersion) {
  Hello out = RoundTrip(Hello{kProtocolVersion, Role::kProducer, 42, 7}, MsgType::kHello);
  EXPECT_EQ(out.role, Role::kProducer);
  EXPECT_EQ(out.forked_from, 42);
  EXPECT_EQ(out.ring_version, 7u);
}

// A producer from before the ring version sends three words: it says none.
TEST(ProtocolTest, HelloWithoutTheRingVersionSaysNone) {
  Encoder e = StartMessage(MsgType::kHello, 1);
  e.Put(kProtocolVersion).Put(Role::kProducer).Put<int32_t>(0);
  MessageHeader header;
  Decoder d({});
  ASSERT_TRUE(SplitMessage(e.bytes(), &header, &d));
  Hello out;
  out.ring_version = 99;
  ASSERT_TRUE(out.Decode(d));
  EXPECT_EQ(out.ring_version, 0u);
}

TEST(ProtocolTest, TruncatedBodyIsRejected) {
  Encoder e = StartMessage(MsgType::kRegister, 1);
  RegisterRequest{0, 0, 0, 4, "abcdef"}.Encode(e);
  e.bytes().resize(e.bytes().size() - 3);
  MessageHeader header;
  Decoder d({});
  ASSERT_TRUE(SplitMessage(e.bytes(), &header, &d));
  RegisterRequest out;
  EXPECT_FALSE(out.Decode(d));
}

TEST(ProtocolTest, ShortMessageHasNoHeader) {
  MessageHeader header;
  Decoder d({});
  EXPECT_FALSE(SplitMessage(std::vector<uint8_t>(5), &header, &d));
}

TEST(ProtocolTest, HugeCountsAreRejected) {
  Encoder e;
  e.Put<uint32_t>(0xffffffff);
  Decoder d(e.bytes());
  InheritRequest out;
  EXPECT_FALSE(out.Decode(d));
}

}  // namespace
}  // namespace udiag::ipc

namespace udiag::ipc {
namespace {

TEST(ProtocolTest, AutoEnableNamesAnInstanceOrTheTop) {
  AutoEnableRequest out =
      RoundTrip(AutoEnableRequest{"count_*", "rec", "count > 1", "hist:keys=count"}, MsgType::kAutoEnable);
  EXPECT_EQ(out.glob, "count_*");
  EXPECT_EQ(out.instance, "rec");
  EXPECT_EQ(out.filter, "count > 1");
  EXPECT_EQ(out.trigger, "hist:keys=count");
  // An older client sends only the glob: the top instance.
  Encoder old;
  PathRequest{"count_*"}.Encode(old);
  Decoder d(old.bytes());
  ASSERT_TRUE(out.Decode(d));
  EXPECT_EQ(out.glob, "count_*");
  EXPECT_EQ(out.instance, "");
  EXPECT_EQ(out.filter, "");
}

}  // namespace
}  // namespace udiag::ipc

namespace udiag::ipc {
namespace {

TEST(ProtocolTest, RecordStreamAsksForPagesOrRecords) {
  RecordStreamRequest out = RoundTrip(RecordStreamRequest{"rec", true}, MsgType::kRecordStream);
  EXPECT_EQ(out.instance, "rec");
  EXPECT_TRUE(out.pages);
  // An older client names only the instance: records.
  Encoder old;
  PathRequest{"rec"}.Encode(old);
  Decoder d(old.bytes());
  ASSERT_TRUE(out.Decode(d));
  EXPECT_EQ(out.instance, "rec");
  EXPECT_FALSE(out.pages);
}

}  // namespace
}  // namespace udiag::ipc
