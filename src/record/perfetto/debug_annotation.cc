#include "record/perfetto/debug_annotation.h"

#include <cstdint>

namespace udiag::record::perfetto {
namespace {

using schema::TypedValue;
using schema::ValueKind;

// DebugAnnotation fields.
constexpr uint32_t kBoolValue = 2;
constexpr uint32_t kUintValue = 3;
constexpr uint32_t kIntValue = 4;
constexpr uint32_t kDoubleValue = 5;
constexpr uint32_t kStringValue = 6;
constexpr uint32_t kNestedValue = 8;
constexpr uint32_t kName = 10;

// DebugAnnotation.NestedValue fields and types.
constexpr uint32_t kNestedType = 1;
constexpr uint32_t kDictKeys = 2;
constexpr uint32_t kDictValues = 3;
constexpr uint32_t kArrayValues = 4;
constexpr uint32_t kNestedInt = 5;
constexpr uint32_t kNestedDouble = 6;
constexpr uint32_t kNestedBool = 7;
constexpr uint32_t kNestedString = 8;
constexpr uint64_t kDict = 1;
constexpr uint64_t kArray = 2;

bool IsSigned(ValueKind kind) {
  return kind == ValueKind::kSigned || kind == ValueKind::kErrno || kind == ValueKind::kPid ||
         kind == ValueKind::kTime;
}

bool IsUnsigned(const TypedValue& value) {
  return value.kind == ValueKind::kUnsigned || value.kind == ValueKind::kHex ||
         value.kind == ValueKind::kPort || (value.kind == ValueKind::kBool && value.bits > 1);
}

// What a value shows as text: the string itself, or RenderValueText.
std::string Text(const TypedValue& value) {
  return value.kind == ValueKind::kString ? value.text : schema::RenderValueText(value);
}

ProtoMessage NestedValue(const TypedValue& value) {
  ProtoMessage nested;
  if (value.kind == ValueKind::kStruct) {
    nested.Varint(kNestedType, kDict);
    for (const TypedValue& item : value.items) nested.Bytes(kDictKeys, item.name);
    for (const TypedValue& item : value.items) nested.Message(kDictValues, NestedValue(item));
  } else if (value.kind == ValueKind::kArray) {
    nested.Varint(kNestedType, kArray);
    for (const TypedValue& item : value.items) nested.Message(kArrayValues, NestedValue(item));
  } else if (IsSigned(value.kind) || (IsUnsigned(value) && value.bits <= INT64_MAX)) {
    nested.Int64(kNestedInt, value.as_signed());
  } else if (value.kind == ValueKind::kBool) {
    nested.Bool(kNestedBool, value.bits != 0);
  } else if (value.kind == ValueKind::kFloat) {
    nested.Double(kNestedDouble, value.real);
  } else {
    nested.Bytes(kNestedString, Text(value));
  }
  return nested;
}

}  // namespace

ProtoMessage EncodeDebugAnnotation(const TypedValue& value) {
  ProtoMessage annotation;
  annotation.Bytes(kName, value.name);
  if (IsSigned(value.kind)) {
    annotation.Int64(kIntValue, value.as_signed());
  } else if (IsUnsigned(value)) {
    annotation.Varint(kUintValue, value.bits);
  } else if (value.kind == ValueKind::kBool) {
    annotation.Bool(kBoolValue, value.bits != 0);
  } else if (value.kind == ValueKind::kFloat) {
    annotation.Double(kDoubleValue, value.real);
  } else if (value.kind == ValueKind::kArray || value.kind == ValueKind::kStruct) {
    annotation.Message(kNestedValue, NestedValue(value));
  } else {
    annotation.Bytes(kStringValue, Text(value));
  }
  return annotation;
}

}  // namespace udiag::record::perfetto
