#include "export/table_schema.h"

#include <gtest/gtest.h>

namespace udiag::exporter {
namespace {

schema::Field IntField(std::string name, uint32_t size, bool is_signed) {
  schema::Field field;
  field.name = std::move(name);
  field.size = size;
  field.is_signed = is_signed;
  return field;
}

TEST(TableSchemaTest, PlainFieldsMapToSizedTypesAndCollisionsAreRenamed) {
  schema::Field text;
  text.name = "path";
  text.kind = schema::FieldKind::kRelLoc;
  text.is_string = true;
  schema::Field raw;
  raw.name = "raw";
  raw.kind = schema::FieldKind::kStaticArray;
  raw.size = 4;
  auto columns = FieldColumns({IntField("status", 2, false), IntField("pid", 4, true), text, raw}, false, {});
  ASSERT_EQ(columns.size(), 4u);
  EXPECT_EQ(columns[0].name, "status");
  EXPECT_EQ(TypeName(columns[0].encoding), "UInt16");
  EXPECT_EQ(columns[1].name, "pid_");
  EXPECT_EQ(TypeName(columns[1].encoding), "Int32");
  EXPECT_EQ(TypeName(columns[2].encoding), "String");
  EXPECT_EQ(TypeName(columns[3].encoding), "Array(UInt8)");
  EXPECT_EQ(ColumnSignature({columns[0]}),
            "batch_id UInt64,host String,boot_id String,ts_ns UInt64,cpu UInt16,pid UInt32,tid UInt32,comm String,"
            "status UInt16");
}

TEST(TableSchemaTest, NamesAreSanitized) {
  EXPECT_EQ(SanitizeName("test.1f"), "test_1f");
  EXPECT_EQ(SanitizeName("9x"), "_9x");
}

TEST(TableSchemaTest, RowBinaryRow) {
  std::vector<Column> columns = {{"status", Encoding::kUInt16}, {"path", Encoding::kString}, {"b", Encoding::kBytes}};
  std::vector<schema::TypedValue> values(3);
  values[0].kind = schema::ValueKind::kUnsigned;
  values[0].bits = 503;
  values[1].kind = schema::ValueKind::kString;
  values[1].text = "/x";
  values[2].kind = schema::ValueKind::kInvalid;  // a truncated record: the column's default
  RowContext context{7, "h", "", 9, 1, 2, 3, "c"};
  std::string row;
  AppendRow(context, columns, values, &row);
  std::string expected;
  AppendFixed<uint64_t>(7, &expected);
  expected += std::string("\x01h\x00", 3);
  AppendFixed<uint64_t>(9, &expected);
  AppendFixed<uint16_t>(1, &expected);
  AppendFixed<uint32_t>(2, &expected);
  AppendFixed<uint32_t>(3, &expected);
  expected += "\x01" "c";
  AppendFixed<uint16_t>(503, &expected);
  expected += "\x02/x";
  expected += std::string("\x00", 1);
  EXPECT_EQ(row, expected);
}

// The plain-event fast path writes what decoding the record would.
TEST(TableSchemaTest, RecordRowMatchesDecodedRow) {
  schema::Field name;
  name.name = "name";
  name.kind = schema::FieldKind::kStaticArray;
  name.offset = 14;
  name.size = 4;
  name.is_string = true;
  schema::Field beyond = IntField("beyond", 4, false);  // past the end of a truncated record
  beyond.offset = 18;
  std::vector<schema::Field> fields = {IntField("a", 2, true), IntField("b", 4, false), name, beyond};
  fields[0].offset = 8;
  fields[1].offset = 10;
  std::vector<uint8_t> record(18, 0);
  record[8] = 0xfe, record[9] = 0xff;  // a = -2
  record[10] = 7;                      // b = 7
  record[14] = 'o', record[15] = 'k';  // name = "ok"
  auto columns = FieldColumns(fields, false, {});
  RowContext context{1, "h", "b", 2, 0, 3, 4, "c"};
  std::string fast, decoded;
  AppendRecordRow(context, columns, fields, record, &fast);
  AppendRow(context, columns, schema::DecodeFields("t", fields, record).values, &decoded);
  EXPECT_EQ(fast, decoded);
  EXPECT_EQ(fast.substr(fast.size() - 13), std::string("\xfe\xff\x07\0\0\0\x02ok\0\0\0\0", 13));
}

TEST(TableSchemaTest, VarUInt) {
  std::string out;
  AppendVarUInt(300, &out);
  EXPECT_EQ(out, "\xac\x02");
}

}  // namespace
}  // namespace udiag::exporter
