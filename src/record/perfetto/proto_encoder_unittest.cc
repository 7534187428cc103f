#include "record/perfetto/proto_encoder.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "record/perfetto/debug_annotation.h"

namespace udiag::record::perfetto {
namespace {

std::string Hex(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    if (!out.empty()) out += ' ';
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string VarintField(uint32_t field, uint64_t value) {
  ProtoMessage m;
  m.Varint(field, value);
  return Hex(m.bytes());
}

TEST(ProtoEncoderTest, Varints) {
  EXPECT_EQ(VarintField(1, 0), "08 00");
  EXPECT_EQ(VarintField(1, 1), "08 01");
  EXPECT_EQ(VarintField(1, 127), "08 7f");
  EXPECT_EQ(VarintField(1, 128), "08 80 01");
  EXPECT_EQ(VarintField(1, 300), "08 ac 02");
  EXPECT_EQ(VarintField(1, std::numeric_limits<uint64_t>::max()), "08 ff ff ff ff ff ff ff ff ff 01");
  // Field numbers of 16 and more need a two-byte key.
  EXPECT_EQ(VarintField(15, 1), "78 01");
  EXPECT_EQ(VarintField(16, 1), "80 01 01");
  EXPECT_EQ(VarintField(58, 3), "d0 03 03");
}

TEST(ProtoEncoderTest, VarintSizeIsWhatPutVarintWrites) {
  for (int bit = 0; bit < 64; ++bit) {
    for (uint64_t value : {uint64_t{1} << bit, (uint64_t{1} << bit) - 1, (uint64_t{1} << bit) + 1}) {
      char bytes[10];
      EXPECT_EQ(VarintSize(value), static_cast<size_t>(PutVarint(bytes, value) - bytes)) << value;
    }
  }
  EXPECT_EQ(VarintSize(0), 1u);
  EXPECT_EQ(VarintSize(UINT64_MAX), 10u);
}

TEST(ProtoEncoderTest, NegativeInt64TakesTenBytes) {
  ProtoMessage m;
  m.Int64(4, -1);
  EXPECT_EQ(Hex(m.bytes()), "20 ff ff ff ff ff ff ff ff ff 01");
  ProtoMessage b;
  b.Bool(2, true);
  b.Bool(2, false);
  EXPECT_EQ(Hex(b.bytes()), "10 01 10 00");
}

TEST(ProtoEncoderTest, Fixed64AndDouble) {
  ProtoMessage m;
  m.Fixed64(47, 0x0102030405060708);
  m.Double(5, 1.0);
  EXPECT_EQ(Hex(m.bytes()), "f9 02 08 07 06 05 04 03 02 01 29 00 00 00 00 00 00 f0 3f");
}

TEST(ProtoEncoderTest, LengthDelimitedAndNested) {
  ProtoMessage child;
  child.Bytes(2, "hi");
  ProtoMessage parent;
  parent.Message(1, child);
  parent.Bytes(3, "");
  EXPECT_EQ(Hex(parent.bytes()), "0a 04 12 02 68 69 1a 00");
  EXPECT_TRUE(ProtoMessage().empty());

  ProtoMessage big;
  big.Bytes(1, std::string(200, 'x'));
  EXPECT_EQ(Hex(big.bytes()).substr(0, 8), "0a c8 01");
  EXPECT_EQ(big.bytes().size(), 3u + 200u);
}

TEST(DebugAnnotationTest, TypedValues) {
  schema::TypedValue value;
  value.name = "x";
  value.kind = schema::ValueKind::kSigned;
  value.bits = static_cast<uint64_t>(int64_t{-2});
  EXPECT_EQ(Hex(EncodeDebugAnnotation(value).bytes()), "52 01 78 20 fe ff ff ff ff ff ff ff ff 01");
  value.kind = schema::ValueKind::kHex;
  value.bits = 255;
  EXPECT_EQ(Hex(EncodeDebugAnnotation(value).bytes()), "52 01 78 18 ff 01");
  value.kind = schema::ValueKind::kBool;
  value.bits = 1;
  EXPECT_EQ(Hex(EncodeDebugAnnotation(value).bytes()), "52 01 78 10 01");
  value.kind = schema::ValueKind::kString;
  value.text = "ok";
  EXPECT_EQ(Hex(EncodeDebugAnnotation(value).bytes()), "52 01 78 32 02 6f 6b");
  value.kind = schema::ValueKind::kBytes;
  value.bytes = {1, 0xab};
  EXPECT_EQ(Hex(EncodeDebugAnnotation(value).bytes()), "52 01 78 32 05 30 31 2c 61 62");

  schema::TypedValue array;
  array.name = "a";
  array.kind = schema::ValueKind::kArray;
  schema::TypedValue element;
  element.kind = schema::ValueKind::kUnsigned;
  element.bits = 7;
  array.items = {element};
  // nested_value { nested_type: ARRAY array_values { int_value: 7 } }
  EXPECT_EQ(Hex(EncodeDebugAnnotation(array).bytes()), "52 01 61 42 06 08 02 22 02 28 07");
}

}  // namespace
}  // namespace udiag::record::perfetto
