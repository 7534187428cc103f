#include "export/table_schema.h"

#include <cstring>
#include <set>

namespace udiag::exporter {
namespace {

using schema::TypedValue;
using schema::ValueKind;

Encoding IntegerEncoding(uint32_t size, bool is_signed) {
  switch (size) {
    case 1: return is_signed ? Encoding::kInt8 : Encoding::kUInt8;
    case 2: return is_signed ? Encoding::kInt16 : Encoding::kUInt16;
    case 4: return is_signed ? Encoding::kInt32 : Encoding::kUInt32;
    default: return is_signed ? Encoding::kInt64 : Encoding::kUInt64;
  }
}

// A plain user event's field, from its format.
Encoding FieldEncoding(const schema::Field& field) {
  switch (field.kind) {
    case schema::FieldKind::kInteger: return IntegerEncoding(field.size, field.is_signed);
    case schema::FieldKind::kStaticArray:
    case schema::FieldKind::kDataLoc:
    case schema::FieldKind::kRelLoc: return field.is_string ? Encoding::kString : Encoding::kBytes;
    case schema::FieldKind::kStruct: return Encoding::kBytes;
  }
  return Encoding::kBytes;
}

// An EventHeader field, from its decoded value.
Encoding ValueEncoding(const TypedValue& value) {
  switch (value.kind) {
    case ValueKind::kSigned:
    case ValueKind::kTime:
    case ValueKind::kErrno:
    case ValueKind::kPid: return Encoding::kInt64;
    case ValueKind::kUnsigned:
    case ValueKind::kHex:
    case ValueKind::kBool:
    case ValueKind::kPort: return Encoding::kUInt64;
    case ValueKind::kFloat: return Encoding::kFloat64;
    case ValueKind::kBytes: return Encoding::kBytes;
    default: return Encoding::kString;  // text, addresses, uuids, arrays and structs as rendered
  }
}

bool Numeric(ValueKind kind) {
  switch (kind) {
    case ValueKind::kSigned:
    case ValueKind::kUnsigned:
    case ValueKind::kHex:
    case ValueKind::kBool:
    case ValueKind::kTime:
    case ValueKind::kErrno:
    case ValueKind::kPid:
    case ValueKind::kPort: return true;
    default: return false;
  }
}

void AppendValue(Encoding encoding, const TypedValue* value, std::string* out) {
  uint64_t bits = value && Numeric(value->kind) ? value->bits : 0;
  switch (encoding) {
    case Encoding::kInt8:
    case Encoding::kUInt8: return AppendFixed(static_cast<uint8_t>(bits), out);
    case Encoding::kInt16:
    case Encoding::kUInt16: return AppendFixed(static_cast<uint16_t>(bits), out);
    case Encoding::kInt32:
    case Encoding::kUInt32: return AppendFixed(static_cast<uint32_t>(bits), out);
    case Encoding::kInt64:
    case Encoding::kUInt64: return AppendFixed(bits, out);
    case Encoding::kFloat64: return AppendFixed(value && value->kind == ValueKind::kFloat ? value->real : 0.0, out);
    case Encoding::kString:
      if (!value || value->kind == ValueKind::kInvalid || value->kind == ValueKind::kNull) return AppendString("", out);
      if (value->kind == ValueKind::kString) return AppendString(value->text, out);
      return AppendString(schema::RenderValueText(*value), out);
    case Encoding::kBytes: {
      bool has = value && value->kind == ValueKind::kBytes;
      AppendVarUInt(has ? value->bytes.size() : 0, out);
      if (has) out->append(reinterpret_cast<const char*>(value->bytes.data()), value->bytes.size());
      return;
    }
  }
}

}  // namespace

std::string_view TypeName(Encoding encoding) {
  switch (encoding) {
    case Encoding::kInt8: return "Int8";
    case Encoding::kInt16: return "Int16";
    case Encoding::kInt32: return "Int32";
    case Encoding::kInt64: return "Int64";
    case Encoding::kUInt8: return "UInt8";
    case Encoding::kUInt16: return "UInt16";
    case Encoding::kUInt32: return "UInt32";
    case Encoding::kUInt64: return "UInt64";
    case Encoding::kFloat64: return "Float64";
    case Encoding::kString: return "String";
    case Encoding::kBytes: return "Array(UInt8)";
  }
  return "String";
}

const std::vector<Column>& CommonColumns() {
  static const std::vector<Column> columns = {
      {"batch_id", Encoding::kUInt64}, {"host", Encoding::kString}, {"boot_id", Encoding::kString},
      {"ts_ns", Encoding::kUInt64},    {"cpu", Encoding::kUInt16},  {"pid", Encoding::kUInt32},
      {"tid", Encoding::kUInt32},      {"comm", Encoding::kString},
  };
  return columns;
}

std::string SanitizeName(std::string_view name) {
  std::string out;
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) out += '_';
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out += ok ? c : '_';
  }
  return out;
}

std::vector<Column> FieldColumns(const std::vector<schema::Field>& fields, bool eventheader,
                                 const schema::DecodedEvent& decoded) {
  std::set<std::string> taken;
  for (const Column& common : CommonColumns()) taken.insert(common.name);
  std::vector<Column> columns;
  auto add = [&](std::string_view name, Encoding encoding) {
    std::string unique = SanitizeName(name);
    while (!taken.insert(unique).second) unique += '_';
    columns.push_back({unique, encoding});
  };
  if (eventheader) {
    for (const TypedValue& value : decoded.values) add(value.name, ValueEncoding(value));
  } else {
    for (const schema::Field& field : fields) add(field.name, FieldEncoding(field));
  }
  return columns;
}

std::string ColumnSignature(const std::vector<Column>& field_columns) {
  std::string signature;
  for (const auto* list : {&CommonColumns(), &field_columns}) {
    for (const Column& column : *list) {
      if (!signature.empty()) signature += ',';
      signature += column.name;
      signature += ' ';
      signature += TypeName(column.encoding);
    }
  }
  return signature;
}

namespace {

void AppendCommon(const RowContext& context, std::string* out) {
  AppendFixed(context.batch_id, out);
  AppendString(context.host, out);
  AppendString(context.boot_id, out);
  AppendFixed(context.ts_ns, out);
  AppendFixed(context.cpu, out);
  AppendFixed(context.pid, out);
  AppendFixed(context.tid, out);
  AppendString(context.comm, out);
}

// A plain field's bytes as its column holds them; false when they are not
// in the record (the column's default is written instead).
bool AppendFieldBytes(Encoding encoding, const schema::Field& field, std::span<const uint8_t> record,
                      std::string* out) {
  if (uint64_t{field.offset} + field.size > record.size()) return false;
  std::span<const uint8_t> bytes = record.subspan(field.offset, field.size);
  if (field.kind == schema::FieldKind::kInteger) {
    if (field.size != 1 && field.size != 2 && field.size != 4 && field.size != 8) return false;
    out->append(reinterpret_cast<const char*>(bytes.data()), bytes.size());  // the column is this wide
    return true;
  }
  if (field.kind == schema::FieldKind::kDataLoc || field.kind == schema::FieldKind::kRelLoc) {
    auto data = schema::LocData(field, record);
    if (!data) return false;
    bytes = *data;
  }
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (encoding == Encoding::kString) {
    AppendString(schema::SanitizeUtf8(text.substr(0, text.find('\0'))), out);
  } else {
    AppendString(text, out);  // Array(UInt8): a length, then the bytes, as a String
  }
  return true;
}

}  // namespace

void AppendRow(const RowContext& context, const std::vector<Column>& columns,
               const std::vector<schema::TypedValue>& values, std::string* out) {
  AppendCommon(context, out);
  for (size_t i = 0; i < columns.size(); ++i) {
    AppendValue(columns[i].encoding, i < values.size() ? &values[i] : nullptr, out);
  }
}

void AppendRecordRow(const RowContext& context, const std::vector<Column>& columns,
                     const std::vector<schema::Field>& fields, std::span<const uint8_t> record, std::string* out) {
  AppendCommon(context, out);
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i >= fields.size() || !AppendFieldBytes(columns[i].encoding, fields[i], record, out)) {
      AppendValue(columns[i].encoding, nullptr, out);
    }
  }
}

void AppendVarUInt(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

void AppendString(std::string_view text, std::string* out) {
  AppendVarUInt(text.size(), out);
  out->append(text);
}

}  // namespace udiag::exporter
