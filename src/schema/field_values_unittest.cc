#include "schema/field_values.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "schema/test_record.h"

namespace udiag::schema {
namespace {

using testing::FieldsOf;
using testing::Record;
constexpr auto Loc = testing::LocWord;

TypedValue Scalar(ValueKind kind, uint64_t bits, std::string name = "") {
  TypedValue value;
  value.name = std::move(name);
  value.kind = kind;
  value.bits = bits;
  return value;
}

TEST(DecodeFieldsTest, IntegersKeepTheirSignedness) {
  Record record;
  record.Add<uint32_t>(0xffffffff).Add<int8_t>(-3).Add<uint16_t>(0xffff).Add<int64_t>(-9);
  DecodedEvent event = DecodeFields("test", FieldsOf("u32 a;s8 b;u16 c;s64 d"), record.span());
  EXPECT_EQ(event.name, "test");
  EXPECT_TRUE(event.meta.empty());
  ASSERT_EQ(event.values.size(), 4u);
  EXPECT_EQ(event.values[0].name, "a");
  EXPECT_EQ(event.values[0].kind, ValueKind::kUnsigned);
  EXPECT_EQ(event.values[0].bits, 0xffffffffu);
  EXPECT_EQ(event.values[1].kind, ValueKind::kSigned);
  EXPECT_EQ(event.values[1].as_signed(), -3);
  EXPECT_EQ(event.values[2].bits, 0xffffu);
  EXPECT_EQ(event.values[3].as_signed(), -9);
  EXPECT_EQ(RenderValuesText(event.values), "a=4294967295 b=-3 c=65535 d=-9");
}

TEST(DecodeFieldsTest, StringsAndBytes) {
  Record record;  // payload starts at 8
  record
      .AddBytes({'h', 'i', 0, 'x'})          // char[4] s      @8
      .Add<uint32_t>(Loc(24, 3))             // __data_loc d   @12
      .Add<uint32_t>(Loc(7, 2))              // __rel_loc r    @16 -> 16+4+7=27
      .AddBytes({1, 2, 3, 4})                // u8[4]? no: struct @20
      .AddBytes({'y', 'o', 0, 0xaa, 0xbb});  // @24..28
  auto fields = FieldsOf("char[4] s;__data_loc char[] d;__rel_loc u8[] r;struct pair p 4");
  DecodedEvent event = DecodeFields("test", fields, record.span());
  ASSERT_EQ(event.values.size(), 4u);
  EXPECT_EQ(event.values[0].kind, ValueKind::kString);
  EXPECT_EQ(event.values[0].text, "hi");
  EXPECT_EQ(event.values[1].text, "yo");
  EXPECT_EQ(event.values[2].kind, ValueKind::kBytes);
  EXPECT_EQ(event.values[2].bytes, (std::vector<uint8_t>{0xaa, 0xbb}));
  EXPECT_EQ(event.values[3].kind, ValueKind::kBytes);
  EXPECT_EQ(RenderValuesText(event.values), "s=\"hi\" d=\"yo\" r=aa,bb p=01,02,03,04");
  EXPECT_EQ(RenderFieldsJson(event.values), R"({"s":"hi","d":"yo","r":"aa,bb","p":"01,02,03,04"})");
}

TEST(DecodeFieldsTest, OutOfBoundsBecomesInvalid) {
  Record record;
  record.Add<uint32_t>(Loc(200, 4)).Add<uint16_t>(1);
  DecodedEvent event = DecodeFields("test", FieldsOf("__data_loc char[] d;u16 a;u64 past"), record.span());
  ASSERT_EQ(event.values.size(), 3u);
  EXPECT_EQ(event.values[0].kind, ValueKind::kInvalid);
  EXPECT_EQ(event.values[0].text, "<OVERFLOW>");
  EXPECT_EQ(event.values[1].bits, 1u);
  EXPECT_EQ(event.values[2].kind, ValueKind::kInvalid);
  EXPECT_EQ(RenderFieldsJson(event.values), R"({"d":null,"a":1,"past":null})");
}

TEST(DecodeFieldsTest, LocDataChecksBounds) {
  Record record;
  record.Add<uint32_t>(Loc(12, 2)).AddBytes({7, 8});
  Field field = FieldsOf("__data_loc u8[] d")[0];
  auto data = LocData(field, record.span());
  ASSERT_TRUE(data);
  EXPECT_EQ(data->size(), 2u);
  EXPECT_EQ((*data)[1], 8);
  EXPECT_FALSE(LocData(field, record.span().first(13)));
  Record too_long;
  too_long.Add<uint32_t>(Loc(12, 3)).AddBytes({7, 8});
  EXPECT_FALSE(LocData(field, too_long.span()));
}

TEST(RenderTest, JsonTypesAndEscapes) {
  TypedValue text;
  text.name = "msg";
  text.kind = ValueKind::kString;
  text.text = "a\"b\\c\n\x01";
  TypedValue real;
  real.name = "r";
  real.kind = ValueKind::kFloat;
  real.real = 2.5;
  TypedValue nan = real;
  nan.name = "nan";
  nan.real = std::nan("");
  TypedValue array;
  array.name = "arr";
  array.kind = ValueKind::kArray;
  array.items = {Scalar(ValueKind::kSigned, static_cast<uint64_t>(-1)), Scalar(ValueKind::kHex, 255)};
  TypedValue nested;
  nested.name = "st";
  nested.kind = ValueKind::kStruct;
  nested.items = {Scalar(ValueKind::kBool, 1, "ok"), Scalar(ValueKind::kErrno, 13, "err")};
  std::vector<TypedValue> values = {text,
                                    real,
                                    nan,
                                    array,
                                    nested,
                                    Scalar(ValueKind::kBool, 7, "odd"),
                                    Scalar(ValueKind::kTime, 86400, "t")};
  EXPECT_EQ(RenderFieldsJson(values),
            R"js({"msg":"a\"b\\c\n\u0001","r":2.5,"nan":"nan","arr":[-1,"0xff"],)js"
            R"js("st":{"ok":true,"err":"EACCES(13)"},"odd":7,"t":"1970-01-02T00:00:00Z"})js");
  EXPECT_EQ(RenderValuesText(values),
            "msg=\"a\\\"b\\\\c\\n\\u0001\" r=2.5 nan=nan arr=[-1,0xff] "
            "st={ ok=true err=EACCES(13) } odd=BOOL(7) t=1970-01-02T00:00:00Z");
  EXPECT_EQ(RenderFieldsJson({}), "{}");
}

TEST(RenderTest, AddressesAndIds) {
  TypedValue v4;
  v4.kind = ValueKind::kIpv4;
  v4.bytes = {192, 168, 1, 2};
  EXPECT_EQ(RenderValueText(v4), "192.168.1.2");
  TypedValue bad = v4;
  bad.bytes = {1, 2};
  EXPECT_EQ(RenderValueText(bad), "01,02");
  TypedValue uuid;
  uuid.kind = ValueKind::kUuid;
  uuid.bytes.assign(16, 0xab);
  EXPECT_EQ(RenderValueText(uuid), "abababab-abab-abab-abab-abababababab");
  EXPECT_EQ(RenderValueText(Scalar(ValueKind::kPort, 443)), "443");
  EXPECT_EQ(RenderValueText(Scalar(ValueKind::kErrno, 0)), "ERRNO(0)");
}

TEST(SanitizeUtf8Test, KeepsValidAndReplacesInvalid) {
  EXPECT_EQ(SanitizeUtf8("plain"), "plain");
  EXPECT_EQ(SanitizeUtf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  EXPECT_EQ(SanitizeUtf8("a\xff"
                         "b"),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(SanitizeUtf8("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");                  // overlong
  EXPECT_EQ(SanitizeUtf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
  EXPECT_EQ(SanitizeUtf8("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd");                  // truncated
}

}  // namespace
}  // namespace udiag::schema
