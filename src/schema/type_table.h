// §4.2: the fixed-size integer types a field may be declared with. Shared by
// the parser (sizes) and the print fmt generator (conversions).
#pragma once

#include <cstdint>
#include <string_view>

namespace udiag::schema {

struct IntegerType {
  std::string_view name;
  uint32_t size;
  std::string_view print_format;
};

inline constexpr IntegerType kIntegerTypes[] = {
    {"s64", 8, "%lld"}, {"u64", 8, "%llu"},          {"s32", 4, "%d"}, {"u32", 4, "%u"},
    {"int", 4, "%d"},   {"unsigned int", 4, "%u"},   {"s16", 2, "%d"}, {"u16", 2, "%u"},
    {"short", 2, "%d"}, {"unsigned short", 2, "%u"}, {"s8", 1, "%d"},  {"u8", 1, "%u"},
    {"char", 1, "%d"},  {"unsigned char", 1, "%u"},
};

// The entry whose name is exactly `type`, or nullptr.
inline const IntegerType* FindIntegerType(std::string_view type) {
  for (const IntegerType& entry : kIntegerTypes) {
    if (entry.name == type) return &entry;
  }
  return nullptr;
}

}  // namespace udiag::schema
