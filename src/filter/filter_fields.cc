#include "filter/filter_fields.h"

#include <cstring>
#include <span>

namespace udiag::filter {
namespace {

struct NamedField {
  std::string_view name;
  FilterField field;
};

constexpr NamedField kGenericFields[] = {
    {"CPU", {FieldClass::kCpu, 0, 4, true}},   {"cpu", {FieldClass::kCpu, 0, 4, true}},
    {"common_cpu", {FieldClass::kCpu, 0, 4, true}}, {"COMM", {FieldClass::kComm, 0, 16, false}},
    {"comm", {FieldClass::kComm, 0, 16, false}},
};

// schema::FormatFile's common header.
constexpr NamedField kCommonFields[] = {
    {"common_type", {FieldClass::kNumber, 0, 2, false}},
    {"common_flags", {FieldClass::kNumber, 2, 1, false}},
    {"common_preempt_count", {FieldClass::kNumber, 3, 1, false}},
    {"common_pid", {FieldClass::kNumber, 4, 4, true}},
};

bool Has(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// The kernel's filter_assign_type(), which looks only at the type's text.
FieldClass ClassOf(const schema::Field& field) {
  std::string_view type = field.type;
  if (Has(type, "__data_loc") && Has(type, "char")) return FieldClass::kDynString;
  if (Has(type, "__rel_loc") && Has(type, "char")) return FieldClass::kRelString;
  if (Has(type, "[") && Has(type, "char")) return FieldClass::kStaticString;
  return FieldClass::kNumber;
}

}  // namespace

std::optional<FilterField> FindField(const std::vector<schema::Field>& fields, std::string_view name) {
  for (const schema::Field& f : fields) {
    if (f.name == name) return FilterField{ClassOf(f), f.offset, f.size, f.is_signed};
  }
  for (const auto& table : {std::span<const NamedField>(kGenericFields), std::span<const NamedField>(kCommonFields)}) {
    for (const NamedField& f : table) {
      if (f.name == name) return f.field;
    }
  }
  return std::nullopt;
}

std::optional<std::span<const uint8_t>> StringBytes(const FilterField& field, std::span<const uint8_t> record) {
  if (field.offset + uint64_t{field.cls == FieldClass::kStaticString ? field.size : 4} > record.size()) {
    return std::nullopt;
  }
  if (field.cls == FieldClass::kStaticString) return record.subspan(field.offset, field.size);
  uint32_t loc;
  std::memcpy(&loc, record.data() + field.offset, sizeof(loc));
  uint64_t start = (field.cls == FieldClass::kRelString ? field.offset + 4u : 0u) + (loc & 0xffffu);
  uint64_t len = loc >> 16;
  if (start + len > record.size()) return std::nullopt;
  return record.subspan(start, len);
}

}  // namespace udiag::filter
