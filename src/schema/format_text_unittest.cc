#include "schema/event_description.h"

#include <gtest/gtest.h>

namespace udiag::schema {
namespace {

EventDescription Parse(std::string_view command) {
  EventDescription event;
  EXPECT_EQ(ParseCommand(command, &event), 0) << command;
  return event;
}

std::vector<Field> FieldsOf(std::string_view args) {
  return Parse("test " + std::string(args)).fields;
}

// The declaration part of the only user field line in the format file.
std::string FormatDeclaration(std::string_view field) {
  std::string format = FormatFile("test", 1, FieldsOf(field));
  size_t start = format.find("\n\n\tfield:");
  if (start == std::string::npos) return "";
  start += 9;
  return format.substr(start, format.find(';', start) - start);
}

TEST(CanonicalFieldTest, TypeAndName) {
  EXPECT_EQ(CanonicalField(FieldsOf("u32 count")[0]), "u32 count");
  EXPECT_EQ(CanonicalField(FieldsOf("unsigned int count")[0]), "unsigned int count");
  EXPECT_EQ(CanonicalField(FieldsOf("char[0x14] msg")[0]), "char[0x14] msg");
  EXPECT_EQ(CanonicalField(FieldsOf("__rel_loc char[] data")[0]), "__rel_loc char[] data");
}

TEST(CanonicalFieldTest, StructsAddTheirSize) {
  EXPECT_EQ(CanonicalField(FieldsOf("struct my_struct a 020")[0]), "struct my_struct a 20");
}

// §11.3 examples.
TEST(DynamicEventsLineTest, ShowFormatExamples) {
  EXPECT_EQ(DynamicEventsLine(Parse("__test_event u32 field1; u32 field2")),
            "u:__test_event u32 field1; u32 field2");
  EXPECT_EQ(DynamicEventsLine(Parse("test char[20] msg;__rel_loc char[] data")),
            "u:test char[20] msg; __rel_loc char[] data");
  EXPECT_EQ(DynamicEventsLine(Parse("test struct my_struct a 20")), "u:test struct my_struct a 20");
  EXPECT_EQ(DynamicEventsLine(Parse("noargs")), "u:noargs");
  EXPECT_EQ(DynamicEventsLine(Parse("test  u32 value;")), "u:test u32 value");
  EXPECT_EQ(DynamicEventsLine(Parse("test u64 value")), "u:test u64 value");
}

TEST(DynamicEventsLineTest, SpaceAfterNameWithoutFields) {
  EXPECT_EQ(DynamicEventsLine(Parse("noargs ")), "u:noargs");
}

// §13.3 selftest-verified strings.
TEST(PrintFmtTest, SelftestStrings) {
  const std::pair<const char*, const char*> cases[] = {
      {"__rel_loc char[] data", "\"data=%s\", __get_rel_str(data)"},
      {"__data_loc char[] data", "\"data=%s\", __get_str(data)"},
      {"s64 data", "\"data=%lld\", REC->data"},
      {"u64 data", "\"data=%llu\", REC->data"},
      {"s32 data", "\"data=%d\", REC->data"},
      {"int data", "\"data=%d\", REC->data"},
      {"s16 data", "\"data=%d\", REC->data"},
      {"short data", "\"data=%d\", REC->data"},
      {"s8 data", "\"data=%d\", REC->data"},
      {"char data", "\"data=%d\", REC->data"},
      {"u32 data", "\"data=%u\", REC->data"},
      {"unsigned int data", "\"data=%u\", REC->data"},
      {"u16 data", "\"data=%u\", REC->data"},
      {"unsigned short data", "\"data=%u\", REC->data"},
      {"u8 data", "\"data=%u\", REC->data"},
      {"unsigned char data", "\"data=%u\", REC->data"},
      {"char[4] data", "\"data=%s\", REC->data"},
  };
  for (const auto& [field, print_fmt] : cases) {
    EXPECT_EQ(PrintFmt(FieldsOf(field)), print_fmt) << field;
  }
}

TEST(PrintFmtTest, OtherTypesAreTreatedAs64Bit) {
  EXPECT_EQ(PrintFmt(FieldsOf("struct my_struct s 20")), "\"s=%llu\", REC->s");
  EXPECT_EQ(PrintFmt(FieldsOf("__data_loc u8[] x")), "\"x=%llu\", REC->x");
  EXPECT_EQ(PrintFmt(FieldsOf("__rel_loc foo x")), "\"x=%llu\", REC->x");
  // "char" without "char[": a string for __get_str, but not for the conversion.
  EXPECT_EQ(PrintFmt(FieldsOf("__data_loc mychar x")), "\"x=%llu\", __get_str(x)");
  EXPECT_EQ(PrintFmt(FieldsOf("unsigned char[0x14] x")), "\"x=%s\", REC->x");
}

TEST(PrintFmtTest, SeveralFields) {
  EXPECT_EQ(PrintFmt(FieldsOf("u32 count; char[20] msg; __data_loc char[] path; "
                              "__rel_loc char[] data; struct my_struct s 20")),
            "\"count=%u msg=%s path=%s data=%s s=%llu\", REC->count, REC->msg, "
            "__get_str(path), __get_rel_str(data), REC->s");
}

TEST(PrintFmtTest, NoFields) { EXPECT_EQ(PrintFmt({}), "\"\""); }

// §13.2, character for character.
TEST(FormatFileTest, SpecExample) {
  std::vector<Field> fields = FieldsOf(
      "u32 count; char[20] msg; __data_loc char[] path; __rel_loc char[] data; "
      "struct my_struct s 20");
  EXPECT_EQ(FormatFile("test", 1234, fields),
            "name: test\n"
            "ID: 1234\n"
            "format:\n"
            "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
            "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
            "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
            "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
            "\n"
            "\tfield:u32 count;\toffset:8;\tsize:4;\tsigned:0;\n"
            "\tfield:char msg[20];\toffset:12;\tsize:20;\tsigned:1;\n"
            "\tfield:__data_loc char[] path;\toffset:32;\tsize:4;\tsigned:1;\n"
            "\tfield:__rel_loc char data[];\toffset:36;\tsize:4;\tsigned:1;\n"
            "\tfield:struct my_struct s;\toffset:40;\tsize:20;\tsigned:1;\n"
            "\n"
            "print fmt: \"count=%u msg=%s path=%s data=%s s=%llu\", REC->count, REC->msg, "
            "__get_str(path), __get_rel_str(data), REC->s\n");
}

TEST(FormatFileTest, NoFieldsGiveTwoEmptyLines) {
  EXPECT_EQ(FormatFile("noargs.a", 7, {}),
            "name: noargs.a\n"
            "ID: 7\n"
            "format:\n"
            "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
            "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
            "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
            "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
            "\n"
            "\n"
            "print fmt: \"\"\n");
}

TEST(FormatFileTest, StaticArraysShowTheDecimalLength) {
  EXPECT_EQ(FormatDeclaration("char[0x14] msg"), "char msg[20]");
  EXPECT_EQ(FormatDeclaration("unsigned char[010] a"), "unsigned char a[8]");
  EXPECT_EQ(FormatDeclaration("char[4]xy a"), "char a[4]");
}

TEST(FormatFileTest, OtherBracketsMoveBehindTheName) {
  EXPECT_EQ(FormatDeclaration("__rel_loc unsigned char[] data"), "__rel_loc unsigned char data[]");
  EXPECT_EQ(FormatDeclaration("__rel_loc u8[4] data"), "__rel_loc u8 data[]");
  EXPECT_EQ(FormatDeclaration("__data_loc u8[4] data"), "__data_loc u8[4] data");
  EXPECT_EQ(FormatDeclaration("struct s[2] a 8"), "struct s a[]");
  EXPECT_EQ(FormatDeclaration("__rel_loc foo data"), "__rel_loc foo data");
}

TEST(FormatFileTest, SignedColumn) {
  std::string format = FormatFile("test", 1, FieldsOf("unsigned char a; s8 b; u64 c"));
  EXPECT_NE(format.find("\tfield:unsigned char a;\toffset:8;\tsize:1;\tsigned:0;\n"
                        "\tfield:s8 b;\toffset:9;\tsize:1;\tsigned:1;\n"
                        "\tfield:u64 c;\toffset:10;\tsize:8;\tsigned:0;\n\n"),
            std::string::npos)
      << format;
}

}  // namespace
}  // namespace udiag::schema
