#include "schema/event_description.h"

#include <gtest/gtest.h>

#include <cstring>

#include "schema/test_record.h"

namespace udiag::schema {
namespace {

using testing::FieldsOf;
using testing::Record;
constexpr auto DynLoc = testing::LocWord;

std::string Render(std::string_view args, const Record& record) {
  return RenderFields(FieldsOf(args), record.span());
}

TEST(RenderFieldsTest, SpecExample) {
  Record record;
  record.Add<uint32_t>(5).AddBytes({'h', 'e', 'l', 'l', 'o', 0, 'x', 'y'});
  EXPECT_EQ(RenderTraceBody("test", FieldsOf("u32 count; char[8] msg"), record.span()),
            "test: count=0x5 (5) msg=hello");
}

TEST(RenderFieldsTest, NoFields) {
  EXPECT_EQ(RenderTraceBody("test", {}, Record().span()), "test:No fields found");
  EXPECT_EQ(RenderFields({}, Record().span()), "No fields found");
}

TEST(RenderFieldsTest, OneByteShowsPrintableCharacters) {
  EXPECT_EQ(Render("u8 a", Record().Add<uint8_t>('A')), "a='A'(65)");
  EXPECT_EQ(Render("char a", Record().Add<uint8_t>(' ')), "a=' '(32)");
  EXPECT_EQ(Render("s8 a", Record().Add<uint8_t>('~')), "a='~'(126)");
  EXPECT_EQ(Render("u8 a", Record().Add<uint8_t>(0)), "a=(0)");
  EXPECT_EQ(Render("u8 a", Record().Add<uint8_t>('\n')), "a=(10)");
  EXPECT_EQ(Render("u8 a", Record().Add<uint8_t>(0x7f)), "a=(127)");
  EXPECT_EQ(Render("s8 a", Record().Add<uint8_t>(0xff)), "a=(255)");  // unsigned value
}

TEST(RenderFieldsTest, TwoBytesAreUnsigned) {
  EXPECT_EQ(Render("u16 a", Record().Add<uint16_t>(0x1234)), "a=0x1234 (4660)");
  EXPECT_EQ(Render("s16 a", Record().Add<int16_t>(-1)), "a=0xffff (65535)");
}

TEST(RenderFieldsTest, FourBytesAreSigned) {
  EXPECT_EQ(Render("u32 a", Record().Add<uint32_t>(0xc001)), "a=0xc001 (49153)");
  EXPECT_EQ(Render("u32 a", Record().Add<uint32_t>(0xffffffff)), "a=0xffffffff (-1)");
  EXPECT_EQ(Render("int a", Record().Add<int32_t>(-2)), "a=0xfffffffe (-2)");
}

TEST(RenderFieldsTest, EightBytesAreSigned) {
  EXPECT_EQ(Render("u64 a", Record().Add<uint64_t>(0x123456789a)), "a=0x123456789a (78187493530)");
  EXPECT_EQ(Render("s64 a", Record().Add<int64_t>(-2)), "a=0xfffffffffffffffe (-2)");
}

TEST(RenderFieldsTest, FieldsAreUnaligned) {
  Record record;
  record.Add<uint8_t>(1).Add<uint64_t>(2).Add<uint16_t>(3);
  EXPECT_EQ(Render("u8 a; u64 b; u16 c", record), "a=(1) b=0x2 (2) c=0x3 (3)");
}

TEST(RenderFieldsTest, StaticArraysStopAtNulOrLength) {
  EXPECT_EQ(Render("char[4] a", Record().AddBytes({'a', 'b', 0, 'c'})), "a=ab");
  EXPECT_EQ(Render("char[4] a", Record().AddBytes({'a', 'b', 'c', 'd', 'e'})), "a=abcd");
  EXPECT_EQ(Render("unsigned char[2] a; u8 b", Record().AddBytes({'x', 'y', 'z'})),
            "a=xy b='z'(122)");
  EXPECT_EQ(Render("char[3] a", Record().AddBytes({0, 'b', 'c'})), "a=");
}

TEST(RenderFieldsTest, DataLocIsRelativeToTheRecord) {
  Record record;
  record.Add<uint32_t>(DynLoc(12, 6)).AddString("hello");
  EXPECT_EQ(Render("__data_loc char[] path", record), "path=hello");
}

TEST(RenderFieldsTest, RelLocIsRelativeToTheEndOfTheLocWord) {
  Record record;
  record.Add<uint32_t>(DynLoc(7, 5)).Add<uint32_t>(DynLoc(0, 3)).AddString("ab").AddString("Test");
  EXPECT_EQ(Render("__rel_loc char[] a; __rel_loc unsigned char[] b", record), "a=Test b=ab");
}

TEST(RenderFieldsTest, LocStringsStopAtNulOrLength) {
  Record record;
  record.Add<uint32_t>(DynLoc(0, 3)).AddBytes({'a', 'b', 'c', 'd', 0});
  EXPECT_EQ(Render("__rel_loc char[] a", record), "a=abc");
  Record with_nul;
  with_nul.Add<uint32_t>(DynLoc(0, 4)).AddBytes({'a', 0, 'c', 0});
  EXPECT_EQ(Render("__rel_loc char[] a", with_nul), "a=a");
}

TEST(RenderFieldsTest, EmptyLoc) {
  Record record;
  record.Add<uint32_t>(DynLoc(0, 0));
  EXPECT_EQ(Render("__rel_loc char[] a", record), "a=");
  EXPECT_EQ(Render("__rel_loc u8[] a", record), "a=");
}

TEST(RenderFieldsTest, LocNonStringsAreHexBytes) {
  Record record;
  record.Add<uint32_t>(DynLoc(12, 3)).AddBytes({0x01, 0x02, 0xff});
  EXPECT_EQ(Render("__data_loc u8[] a", record), "a=01,02,ff");
  Record relative;
  relative.Add<uint32_t>(DynLoc(0, 1)).AddBytes({0xa0});
  EXPECT_EQ(Render("__rel_loc foo a", relative), "a=a0");
}

TEST(RenderFieldsTest, LocMayPointIntoTheHeader) {
  Record record;
  record.Add<uint32_t>(DynLoc(0, 2));
  EXPECT_EQ(Render("__data_loc u8[] a", record), "a=2a,00");
}

TEST(RenderFieldsTest, FieldOutsideTheRecordOverflows) {
  Record record;
  record.Add<uint16_t>(7);
  EXPECT_EQ(Render("u16 a; u32 b", record), "a=0x7 (7) b=<OVERFLOW>");
  EXPECT_EQ(Render("u16 a; char[2] b; __data_loc char[] c", record),
            "a=0x7 (7) b=<OVERFLOW> c=<OVERFLOW>");
  EXPECT_EQ(Render("struct s a 20", record), "a=<OVERFLOW>");
}

TEST(RenderFieldsTest, RecordShorterThanTheHeader) {
  std::vector<uint8_t> bytes = {1, 2, 3};
  EXPECT_EQ(RenderFields(FieldsOf("u8 a"), bytes), "a=<OVERFLOW>");
  EXPECT_EQ(RenderFields(FieldsOf("u8 a"), {}), "a=<OVERFLOW>");
}

TEST(RenderFieldsTest, LocTargetOutsideTheRecordOverflows) {
  Record data_loc;
  data_loc.Add<uint32_t>(DynLoc(12, 6)).AddString("hell");
  EXPECT_EQ(Render("__data_loc char[] a", data_loc), "a=<OVERFLOW>");
  Record rel_loc;
  rel_loc.Add<uint32_t>(DynLoc(1, 5)).AddString("Test");
  EXPECT_EQ(Render("__rel_loc char[] a", rel_loc), "a=<OVERFLOW>");
  Record far;
  far.Add<uint32_t>(DynLoc(0xffff, 0xffff));
  EXPECT_EQ(Render("__rel_loc u8[] a; __data_loc u8[] b", far.Add<uint32_t>(0xffffffff)),
            "a=<OVERFLOW> b=<OVERFLOW>");
}

TEST(RenderFieldsTest, StructsPrintLikeIntegersOfTheirSize) {
  EXPECT_EQ(Render("struct s a 1", Record().Add<uint8_t>('s')), "a='s'(115)");
  EXPECT_EQ(Render("struct s a 2", Record().Add<uint16_t>(2)), "a=0x2 (2)");
  EXPECT_EQ(Render("struct s a 4", Record().Add<int32_t>(-4)), "a=0xfffffffc (-4)");
  EXPECT_EQ(Render("struct s a 8", Record().Add<uint64_t>(8)), "a=0x8 (8)");
}

TEST(RenderFieldsTest, StructsOfOtherSizesAreInvalid) {
  EXPECT_EQ(Render("struct s a 3", Record().AddBytes({1, 2, 3})), "a=<INVALID-SIZE>");
  Record record;
  record.AddBytes(std::vector<uint8_t>(20, 0)).Add<uint8_t>(1);
  EXPECT_EQ(Render("struct s a 20; u8 b", record), "a=<INVALID-SIZE> b=(1)");
}

}  // namespace
}  // namespace udiag::schema
