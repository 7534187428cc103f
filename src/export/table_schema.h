// How an event becomes a typed ClickHouse table: the columns its format (or,
// for an EventHeader event, its decoded fields) maps to, and its records
// encoded as RowBinary rows of those columns. Only types that ClickHouse
// 18.16 and current releases share: (U)Int8..64, Float64, String, Array.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schema/event_description.h"
#include "schema/field_values.h"

namespace udiag::exporter {

// How a value is written in RowBinary.
enum class Encoding { kInt8, kInt16, kInt32, kInt64, kUInt8, kUInt16, kUInt32, kUInt64, kFloat64, kString, kBytes };

struct Column {
  std::string name;  // [A-Za-z0-9_], unique in its table
  Encoding encoding = Encoding::kString;
};

// The ClickHouse type of an encoding: "Int8", ..., "Float64", "String", "Array(UInt8)".
std::string_view TypeName(Encoding encoding);

// The columns every event table starts with, in this order.
const std::vector<Column>& CommonColumns();

// What a record has besides its fields.
struct RowContext {
  uint64_t batch_id = 0;
  std::string_view host;
  std::string_view boot_id;
  uint64_t ts_ns = 0;
  uint16_t cpu = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::string_view comm;
};

// A name usable as a table or column name: bytes outside [A-Za-z0-9_]
// become '_', and a leading digit gets a '_' before it.
std::string SanitizeName(std::string_view name);

// The field columns of an event. `fields` is the event's format; `decoded`
// one of its records decoded (its values give the columns of an EventHeader
// event, whose fields are in its payload). Names that collide with the common
// columns or each other get a '_' appended.
std::vector<Column> FieldColumns(const std::vector<schema::Field>& fields, bool eventheader,
                                 const schema::DecodedEvent& decoded);

// "name type,name type,..." of common + field columns: the table's identity.
std::string ColumnSignature(const std::vector<Column>& field_columns);

// Appends one RowBinary row: the common columns from `context`, then
// `values` encoded as `columns` (same order) say. A value that does not fit
// its column (a truncated record's kInvalid) becomes the column's default.
void AppendRow(const RowContext& context, const std::vector<Column>& columns,
               const std::vector<schema::TypedValue>& values, std::string* out);

// The same row for a plain user event straight from its record's bytes
// (`columns` from FieldColumns of `fields`), without decoding into values:
// what keeps the exporter's cost per event low.
void AppendRecordRow(const RowContext& context, const std::vector<Column>& columns,
                     const std::vector<schema::Field>& fields, std::span<const uint8_t> record, std::string* out);

// RowBinary primitives.
void AppendVarUInt(uint64_t value, std::string* out);
void AppendString(std::string_view text, std::string* out);
template <typename T>
void AppendFixed(T value, std::string* out) {
  out->append(reinterpret_cast<const char*>(&value), sizeof value);  // little-endian hosts only
}

}  // namespace udiag::exporter
