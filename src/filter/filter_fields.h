// The fields a filter may name for one event, resolved as the kernel does:
// the event's own fields first, then the generic CPU/COMM ones, then the
// common header's.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "schema/event_description.h"

namespace udiag::filter {

// The kernel's filter_type of a field, which decides the ops and values it takes.
enum class FieldClass : uint8_t {
  kNumber,        // compared by size (1, 2, 4, 8 bytes; other sizes never match)
  kStaticString,  // char[N]: N bytes in the record
  kDynString,     // __data_loc char[]: offset from the record start
  kRelString,     // __rel_loc char[]: offset from the end of the loc word
  kComm,          // COMM, comm: the writing thread's name
  kCpu,           // CPU, cpu, common_cpu: the cpu it ran on
};

struct FilterField {
  FieldClass cls = FieldClass::kNumber;
  uint32_t offset = 0;  // in the record, common header included
  uint32_t size = 0;
  bool is_signed = false;

  bool is_string() const { return cls != FieldClass::kNumber && cls != FieldClass::kCpu; }
};

std::optional<FilterField> FindField(const std::vector<schema::Field>& fields, std::string_view name);

}  // namespace udiag::filter
