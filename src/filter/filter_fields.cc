#include "filter/filter_fields.h"

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

}  // namespace udiag::filter
