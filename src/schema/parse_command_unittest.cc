#include "schema/event_description.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace udiag::schema {
namespace {

EventDescription Parse(std::string_view command) {
  EventDescription event;
  EXPECT_EQ(ParseCommand(command, &event), 0) << command;
  return event;
}

// The single field of "test <field>".
Field ParseOneField(std::string_view field) {
  EventDescription event = Parse("test " + std::string(field));
  EXPECT_EQ(event.fields.size(), 1u) << field;
  return event.fields.empty() ? Field{} : event.fields[0];
}

void ExpectRejected(std::string_view command) {
  EventDescription event;
  EXPECT_EQ(ParseCommand(command, &event), EINVAL) << command;
}

void ExpectField(const Field& field, std::string_view type, std::string_view name, FieldKind kind,
                 uint32_t offset, uint32_t size) {
  EXPECT_EQ(field.type, type);
  EXPECT_EQ(field.name, name);
  EXPECT_EQ(field.kind, kind) << type;
  EXPECT_EQ(field.offset, offset) << type;
  EXPECT_EQ(field.size, size) << type;
}

// §4.3 examples.

TEST(ParseCommandTest, NameOnlyHasNoFields) {
  EventDescription event = Parse("test");
  EXPECT_EQ(event.name, "test");
  EXPECT_TRUE(event.fields.empty());
  EXPECT_EQ(event.min_size, 0u);
}

TEST(ParseCommandTest, FieldsFollowTheCommonHeader) {
  EventDescription event = Parse("test u32 count;char[20] msg");
  EXPECT_EQ(event.name, "test");
  ASSERT_EQ(event.fields.size(), 2u);
  ExpectField(event.fields[0], "u32", "count", FieldKind::kInteger, 8, 4);
  ExpectField(event.fields[1], "char[20]", "msg", FieldKind::kStaticArray, 12, 20);
  EXPECT_EQ(event.min_size, 24u);
}

TEST(ParseCommandTest, TrailingSemicolonIsIgnored) {
  EventDescription event = Parse("test u32 a;");
  ASSERT_EQ(event.fields.size(), 1u);
  ExpectField(event.fields[0], "u32", "a", FieldKind::kInteger, 8, 4);
  EXPECT_EQ(event.min_size, 4u);
}

TEST(ParseCommandTest, SpacesBeforeAFieldAreSkipped) {
  EventDescription event = Parse("test  u32 a");
  ASSERT_EQ(event.fields.size(), 1u);
  ExpectField(event.fields[0], "u32", "a", FieldKind::kInteger, 8, 4);
  ASSERT_EQ(Parse("test u32 a;\t\n u32 b").fields.size(), 2u);
}

TEST(ParseCommandTest, EverySpaceInsideAFieldSeparates) {
  ExpectRejected("test u32  a");
  ExpectRejected("test u32 a ;u32 b");
  ExpectRejected("test unsigned  int a");
}

TEST(ParseCommandTest, FieldsAreNotAligned) {
  EventDescription event = Parse("test u8 a; u64 b");
  ASSERT_EQ(event.fields.size(), 2u);
  ExpectField(event.fields[0], "u8", "a", FieldKind::kInteger, 8, 1);
  ExpectField(event.fields[1], "u64", "b", FieldKind::kInteger, 9, 8);
  EXPECT_EQ(event.min_size, 9u);
}

TEST(ParseCommandTest, StructNeedsASize) {
  ExpectField(ParseOneField("struct foo bar 20"), "struct foo", "bar", FieldKind::kStruct, 8, 20);
  ExpectRejected("test struct foo bar");
  ExpectRejected("test struct foo");
}

TEST(ParseCommandTest, SizeOnlyForStructs) {
  ExpectRejected("test char a 20");
  ExpectRejected("test u32 a 4");
  ExpectRejected("test struct foo bar 20 x");
}

TEST(ParseCommandTest, ArrayLengthMustBeANumberFrom1To1024) {
  ExpectRejected("test char[0] a");
  ExpectRejected("test char[1025] a");
  ExpectRejected("test char[aa] a");
  EXPECT_EQ(ParseOneField("char[1] a").size, 1u);
  EXPECT_EQ(ParseOneField("char[1024] a").size, 1024u);
}

TEST(ParseCommandTest, TextFlagsAreRejected) {
  ExpectRejected("test:FLAG u32 a");
  ExpectRejected("test:");
  ExpectRejected("te:st");
}

TEST(ParseCommandTest, DuplicateFieldNamesAreAccepted) {
  EventDescription event = Parse("test u32 a; u32 a");
  ASSERT_EQ(event.fields.size(), 2u);
  EXPECT_EQ(event.fields[1].offset, 12u);
}

// Names.

TEST(ParseCommandTest, RejectsEmptyNamesAndSlashes) {
  ExpectRejected("");
  ExpectRejected(" u32 a");
  ExpectRejected("a/b");
  ExpectRejected("a/b u32 a");
}

TEST(ParseCommandTest, AcceptsOtherBytesInNames) {
  EXPECT_EQ(Parse("te\tst.x\xc3\xa9").name, "te\tst.x\xc3\xa9");
  EXPECT_EQ(Parse("__test_event u32 a").name, "__test_event");
}

TEST(ParseCommandTest, ColonInArgumentsIsPartOfTheFieldName) {
  EXPECT_EQ(ParseOneField("u32 a:b").name, "a:b");
}

TEST(ParseCommandTest, SpaceAfterNameWithoutFields) { EXPECT_TRUE(Parse("test ").fields.empty()); }

TEST(ParseCommandTest, DoubleSemicolonGivesNoExtraField) {
  EXPECT_EQ(Parse("test u32 a;;u32 b").fields.size(), 2u);
}

// Kernel quirk: strsep() yields an empty name part, not a missing one.
TEST(ParseCommandTest, TrailingSpaceAfterTypeGivesAnEmptyFieldName) {
  ExpectField(ParseOneField("u32 "), "u32", "", FieldKind::kInteger, 8, 4);
}

TEST(ParseCommandTest, FieldWithoutNameIsRejected) {
  ExpectRejected("test u32");
  ExpectRejected("test unsigned int");
  ExpectRejected("test u32 a;u64");
}

TEST(ParseCommandTest, FailureLeavesOutputAlone) {
  EventDescription event = Parse("keep u32 a");
  EXPECT_EQ(ParseCommand("test u32 a;bogus b", &event), EINVAL);
  EXPECT_EQ(event.name, "keep");
  EXPECT_EQ(event.fields.size(), 1u);
}

// §4.2 accepted types.

struct IntegerCase {
  const char* type;
  uint32_t size;
  bool is_signed;
};

TEST(ParseCommandTest, IntegerTypes) {
  const IntegerCase cases[] = {
      {"s64", 8, true},   {"u64", 8, false},
      {"s32", 4, true},   {"u32", 4, false},
      {"int", 4, true},   {"unsigned int", 4, false},
      {"s16", 2, true},   {"u16", 2, false},
      {"short", 2, true}, {"unsigned short", 2, false},
      {"s8", 1, true},    {"u8", 1, false},
      {"char", 1, true},  {"unsigned char", 1, false},
  };
  for (const IntegerCase& c : cases) {
    Field field = ParseOneField(std::string(c.type) + " a");
    ExpectField(field, c.type, "a", FieldKind::kInteger, 8, c.size);
    EXPECT_EQ(field.is_signed, c.is_signed) << c.type;
    EXPECT_FALSE(field.is_string) << c.type;
  }
}

TEST(ParseCommandTest, StaticCharArrays) {
  Field field = ParseOneField("char[20] msg");
  ExpectField(field, "char[20]", "msg", FieldKind::kStaticArray, 8, 20);
  EXPECT_TRUE(field.is_signed);
  EXPECT_TRUE(field.is_string);

  field = ParseOneField("unsigned char[20] msg");
  ExpectField(field, "unsigned char[20]", "msg", FieldKind::kStaticArray, 8, 20);
  EXPECT_FALSE(field.is_signed);
  EXPECT_TRUE(field.is_string);
}

TEST(ParseCommandTest, ArrayLengthUsesKernelBaseZeroRules) {
  EXPECT_EQ(ParseOneField("char[0x14] a").size, 20u);
  EXPECT_EQ(ParseOneField("char[0X14] a").size, 20u);
  EXPECT_EQ(ParseOneField("unsigned char[0x14] a").size, 20u);
  EXPECT_EQ(ParseOneField("char[010] a").size, 8u);  // leading 0 means octal
  EXPECT_EQ(ParseOneField("char[+5] a").size, 5u);
  ExpectRejected("test char[08] a");
  ExpectRejected("test char[0x] a");
  ExpectRejected("test char[-1] a");
  ExpectRejected("test char[ 1] a");
}

TEST(ParseCommandTest, ArrayLengthTextMustFitEightBytes) {
  EXPECT_EQ(ParseOneField("char[0x0014] a").size, 20u);  // 7 characters after '['
  ExpectRejected("test char[0x00014] a");                // 8 characters
  ExpectRejected("test char[20]xyzab a");
  ExpectRejected("test char[0x0000000000001] a");
}

TEST(ParseCommandTest, TextAfterClosingBracketIsIgnored) {
  Field field = ParseOneField("char[20]xy a");
  EXPECT_EQ(field.type, "char[20]xy");
  EXPECT_EQ(field.size, 20u);
}

TEST(ParseCommandTest, ArrayNeedsClosingBracketAndLength) {
  ExpectRejected("test char[20 a");
  ExpectRejected("test char[] a");
  ExpectRejected("test char[ a");
}

TEST(ParseCommandTest, OnlyCharArrays) {
  ExpectRejected("test u8[4] a");
  ExpectRejected("test int[2] a");
  ExpectRejected("test unsigned int[2] a");
  ExpectRejected("test s8[2] a");
}

TEST(ParseCommandTest, LocTypes) {
  struct LocCase {
    const char* type;
    FieldKind kind;
    bool is_string;
  };
  const LocCase cases[] = {
      {"__data_loc char[]", FieldKind::kDataLoc, true},
      {"__data_loc unsigned char[]", FieldKind::kDataLoc, true},
      {"__rel_loc char[]", FieldKind::kRelLoc, true},
      {"__rel_loc unsigned char[]", FieldKind::kRelLoc, true},
      {"__data_loc u8[]", FieldKind::kDataLoc, false},
      {"__rel_loc foo", FieldKind::kRelLoc, false},
      {"__data_loc mychar", FieldKind::kDataLoc, true},  // substring rule (quirk)
  };
  for (const LocCase& c : cases) {
    Field field = ParseOneField(std::string(c.type) + " data");
    ExpectField(field, c.type, "data", c.kind, 8, 4);
    EXPECT_TRUE(field.is_signed) << c.type;
    EXPECT_EQ(field.is_string, c.is_string) << c.type;
  }
}

TEST(ParseCommandTest, LocNeedsTypeAndName) {
  ExpectRejected("test __data_loc x");
  ExpectRejected("test __rel_loc unsigned x");
  ExpectRejected("test __data_loc a b c");
}

TEST(ParseCommandTest, StructFields) {
  Field field = ParseOneField("struct my_struct s 20");
  ExpectField(field, "struct my_struct", "s", FieldKind::kStruct, 8, 20);
  EXPECT_TRUE(field.is_signed);
  EXPECT_FALSE(field.is_string);
  EXPECT_FALSE(ParseOneField("struct mychar s 4").is_string);
}

TEST(ParseCommandTest, StructSizeIsDecimal) {
  EXPECT_EQ(ParseOneField("struct s a 020").size, 20u);
  EXPECT_EQ(ParseOneField("struct s a +3").size, 3u);
  EXPECT_EQ(ParseOneField("struct s a 2147483647").size, 2147483647u);
  ExpectRejected("test struct s a 0x14");
  ExpectRejected("test struct s a 0");
  ExpectRejected("test struct s a -1");
  ExpectRejected("test struct s a 2147483648");  // the kernel's int size goes negative
  ExpectRejected("test struct s a 99999999999");
}

TEST(ParseCommandTest, RecordLayoutMustFitOffsets) {
  EXPECT_EQ(Parse("test struct s a 2147483647; struct s b 2147483640").min_size, 4294967287u);
  ExpectRejected("test struct s a 2147483647; struct s b 2147483640; u8 c");
}

TEST(ParseCommandTest, RejectedTypes) {
  for (const char* type : {"long", "unsigned long", "long long", "bool", "char*", "void*", "pid_t",
                           "size_t", "float", "double", "unsigned", "u128", "S32"}) {
    ExpectRejected("test " + std::string(type) + " a");
  }
  ExpectRejected("test unsigned long long a");
  ExpectRejected("test char * p");
  ExpectRejected("test u32\ta");
}

// §20.2 dyn_test vectors, as given after "u:".

TEST(ParseCommandTest, DynTestBasicTypes) {
  for (const char* type :
       {"u64", "u32", "u16", "u8", "char", "unsigned char", "int", "unsigned int", "short",
        "unsigned short", "char[20]", "unsigned char[20]", "char[0x14]", "unsigned char[0x14]"}) {
    Parse("__test_event " + std::string(type) + " a");
  }
  ExpectRejected("__test_event char[aa] a");
  ExpectRejected("__test_event char[9999] a");
  ExpectRejected("__test_event char[0x0000000000001] a");
}

TEST(ParseCommandTest, DynTestLocTypes) {
  for (const char* type : {"__data_loc char[]", "__data_loc unsigned char[]", "__rel_loc char[]",
                           "__rel_loc unsigned char[]"}) {
    Parse("__test_event " + std::string(type) + " a");
  }
}

TEST(ParseCommandTest, DynTestSizeTypes) {
  Parse("__test_event struct custom a 20");
  ExpectRejected("__test_event struct custom a");
  ExpectRejected("__test_event char a 20");
}

TEST(ParseCommandTest, SelftestRegistrations) {
  EventDescription event = Parse("__test_event u32 field1; u32 field2");
  ASSERT_EQ(event.fields.size(), 2u);
  ExpectField(event.fields[0], "u32", "field1", FieldKind::kInteger, 8, 4);
  ExpectField(event.fields[1], "u32", "field2", FieldKind::kInteger, 12, 4);
  EXPECT_EQ(event.min_size, 8u);
  EXPECT_EQ(Parse("__test_event __rel_loc char[] data").min_size, 4u);
}

}  // namespace
}  // namespace udiag::schema
