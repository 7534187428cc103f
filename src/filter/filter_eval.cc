// Filter::Matches(): the compiled tree against one record's bytes, read in
// place (the record is untrusted: every read is bounds-checked).
#include <algorithm>
#include <cstring>
#include <optional>

#include "filter/filter.h"

namespace udiag::filter {
namespace {

constexpr size_t kCommBytes = 16;  // TASK_COMM_LEN

// Sign-extends the low `bytes` bytes of `v`.
int64_t SignExtend(uint64_t v, uint32_t bytes) {
  const int shift = 64 - 8 * static_cast<int>(bytes);
  return static_cast<int64_t>(v << shift) >> shift;
}

uint64_t Truncate(uint64_t v, uint32_t bytes) { return bytes == 8 ? v : v & ((uint64_t{1} << (8 * bytes)) - 1); }

template <typename T>
bool Compare(Op op, T field, T value) {
  switch (op) {
    case Op::kLt: return field < value;
    case Op::kLe: return field <= value;
    case Op::kGt: return field > value;
    case Op::kGe: return field >= value;
    case Op::kBand: return (field & value) != 0;
    default: return false;
  }
}

bool TestNumber(const Predicate& p, std::span<const uint8_t> record) {
  const uint32_t size = p.field.size;
  // Other sizes (a struct) have no comparison in the kernel: never a match.
  if ((size != 1 && size != 2 && size != 4 && size != 8) || p.field.offset + uint64_t{size} > record.size()) {
    return false;
  }
  uint64_t raw = 0;
  std::memcpy(&raw, record.data() + p.field.offset, size);  // little-endian
  if (p.op == Op::kEq || p.op == Op::kNe) return (raw == Truncate(p.value, size)) != p.negate;
  if (p.field.is_signed) return Compare<int64_t>(p.op, SignExtend(raw, size), SignExtend(p.value, size));
  return Compare<uint64_t>(p.op, raw, Truncate(p.value, size));
}

// The kernel compares the cpu as an int; "&" is no cpu operation.
bool TestCpu(const Predicate& p, uint32_t cpu) {
  const int value = static_cast<int>(p.value);
  const int c = static_cast<int>(cpu);
  switch (p.op) {
    case Op::kEq: return c == value;
    case Op::kNe: return c != value;
    default: return p.op != Op::kBand && Compare<int>(p.op, c, value);
  }
}

// The bytes of a string field, or nullopt when the record does not hold them.
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

}  // namespace

bool Filter::Test(const Predicate& p, const RecordContext& context) const {
  switch (p.field.cls) {
    case FieldClass::kNumber:
      return TestNumber(p, context.record);
    case FieldClass::kCpu:
      return TestCpu(p, context.cpu);
    case FieldClass::kComm: {
      uint8_t comm[kCommBytes] = {};
      std::memcpy(comm, context.comm.data(), std::min(context.comm.size(), kCommBytes - 1));
      return MatchString(p.match, comm) != p.negate;
    }
    case FieldClass::kStaticString:
    case FieldClass::kDynString:
    case FieldClass::kRelString: {
      auto bytes = StringBytes(p.field, context.record);
      return bytes && MatchString(p.match, *bytes) != p.negate;
    }
  }
  return false;
}

bool Filter::Eval(uint32_t index, const RecordContext& context) const {
  const Node& node = nodes_[index];
  switch (node.kind) {
    case Node::Kind::kPred: return Test(preds_[node.a], context);
    case Node::Kind::kAnd: return Eval(node.a, context) && Eval(node.b, context);
    case Node::Kind::kOr: return Eval(node.a, context) || Eval(node.b, context);
    case Node::Kind::kNot: return !Eval(node.a, context);
  }
  return false;
}

bool Filter::Matches(const RecordContext& context) const {
  return nodes_.empty() || Eval(root_, context);
}

}  // namespace udiag::filter
