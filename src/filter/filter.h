// ftrace event filters (the `filter` files): the kernel's grammar, errors and
// matching, compiled once against an event's fields and evaluated against a
// record's bytes without allocating.
//
//   expr := term { "||" term }     term := factor { "&&" factor }
//   factor := "!" factor | "(" expr ")" | field op value
//
// Behaviour follows the kernel's trace_events_filter.c (v6.x); its quirks
// (error positions, errno values, match kinds) are kept on purpose and listed
// in docs/filters.md and docs/compat.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "filter/filter_error.h"
#include "filter/filter_fields.h"
#include "filter/string_match.h"

namespace udiag::filter {

enum class Op : uint8_t { kGlob, kNe, kEq, kLe, kLt, kGe, kGt, kBand };

struct Predicate {
  FilterField field;
  Op op = Op::kEq;
  bool negate = false;  // "!=" and "~ \"!pattern\"": the match is inverted
  uint64_t value = 0;   // numbers: as written, truncated to the field's size when compared
  StringMatch match;    // strings
};

// What a record is matched against besides its bytes.
struct RecordContext {
  std::span<const uint8_t> record;  // common header + payload
  uint32_t cpu = 0;
  std::string_view comm;  // the writing thread's name; only read when needs_comm()
};

class Filter {
 public:
  Filter() = default;
  // Whether the record passes. A default-constructed Filter passes everything.
  bool Matches(const RecordContext& context) const;
  // Whether any predicate tests COMM (the caller then looks the name up).
  bool needs_comm() const { return needs_comm_; }
  size_t predicates() const { return preds_.size(); }

 private:
  friend class Parser;
  struct Node {
    enum class Kind : uint8_t { kPred, kAnd, kOr, kNot } kind;
    uint32_t a = 0;  // kPred: the predicate; else the (first) operand node
    uint32_t b = 0;  // kAnd/kOr: the second operand node
  };
  bool Eval(uint32_t node, const RecordContext& context) const;
  bool Test(const Predicate& pred, const RecordContext& context) const;
  std::vector<Node> nodes_;
  std::vector<Predicate> preds_;
  uint32_t root_ = 0;
  bool needs_comm_ = false;
};

// Writes longer than a page are refused (EINVAL) before parsing, as tracefs does.
inline constexpr size_t kMaxFilterText = 4095;

// Compiles `text` for an event whose own fields are `fields`. Returns 0, or
// the errno the kernel's write returns (mostly EINVAL; EPERM, ENOENT and
// ESRCH for some structural errors, as the kernel) with `error` filled.
int Compile(std::string_view text, const std::vector<schema::Field>& fields, Filter* out, ParseError* error);

}  // namespace udiag::filter
