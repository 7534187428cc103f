// Kernel record layout <-> CTF payload, field by field.

#include "record/ctf/event_payload.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "base/short_copy.h"

namespace udiag::record::ctf {
namespace {

constexpr uint32_t kLocLimit = 0xffff;  // loc words hold 16-bit offsets and lengths

// Writes `size` bytes at `offset` of the record, zero where the record is
// short.
uint8_t* PutFixed(std::span<const uint8_t> record, uint32_t offset, uint32_t size, uint8_t* out) {
  const size_t available = offset < record.size() ? std::min<size_t>(size, record.size() - offset) : 0;
  if (available != 0) base::CopyShort(out, record.data() + offset, available);
  if (available < size) [[unlikely]]
    std::memset(out + available, 0, size - available);
  return out + size;
}

// The dynamic data a loc word refers to; empty if it lies outside the record.
std::span<const uint8_t> LocData(const PayloadPlan::Step& word, std::span<const uint8_t> record) {
  uint32_t loc = 0;
  if (word.size >= sizeof(loc) && word.offset + sizeof(loc) <= record.size()) {
    std::memcpy(&loc, record.data() + word.offset, sizeof(loc));
  }
  uint64_t start = loc & 0xffff;
  if (word.relative) start += word.offset + sizeof(loc);
  uint64_t length = loc >> 16;
  if (start + length > record.size()) return {};
  return record.subspan(start, length);
}

// Appends `data` after the record's current end and points the loc word of
// `field` at it.
bool AppendLocData(const schema::Field& field, std::span<const uint8_t> data,
                   std::vector<uint8_t>* record) {
  uint64_t position = record->size();
  uint64_t offset = field.kind == schema::FieldKind::kRelLoc ? position - (field.offset + 4) : position;
  if (field.size != 4 || offset > kLocLimit || data.size() > kLocLimit) return false;
  uint32_t loc = static_cast<uint32_t>(data.size() << 16 | offset);
  std::memcpy(record->data() + field.offset, &loc, sizeof(loc));
  record->insert(record->end(), data.begin(), data.end());
  return true;
}

// Fields copied as they are, at their size.
bool IsFixed(CtfFieldKind kind) {
  return kind != CtfFieldKind::kDynString && kind != CtfFieldKind::kDynByteArray;
}

}  // namespace

PayloadPlan PlanPayload(const EventType& type) {
  PayloadPlan plan;
  for (const schema::Field& field : type.fields) {
    const CtfFieldKind kind = KindOf(field);
    PayloadPlan::Step* last = plan.steps.empty() ? nullptr : &plan.steps.back();
    if (IsFixed(kind) && last && IsFixed(last->kind) && last->offset + last->size == field.offset) {
      last->size += field.size;  // continues the run before it
      continue;
    }
    plan.steps.push_back({kind, field.offset, field.size, field.kind == schema::FieldKind::kRelLoc});
  }
  for (const PayloadPlan::Step& step : plan.steps) {
    if (IsFixed(step.kind)) {
      plan.fixed_bytes += step.size;
    } else {
      ++plan.dynamic_fields;
    }
  }
  return plan;
}

uint8_t* EncodePayload(const PayloadPlan& plan, std::span<const uint8_t> record, uint8_t* out) {
  for (const PayloadPlan::Step& step : plan.steps) {
    switch (step.kind) {
      case CtfFieldKind::kDynString: {  // up to its first NUL, then one
        const std::span<const uint8_t> data = LocData(step, record);
        const size_t length = std::find(data.begin(), data.end(), 0) - data.begin();
        if (length != 0) std::memcpy(out, data.data(), length);
        out[length] = 0;
        out += length + 1;
        break;
      }
      case CtfFieldKind::kDynByteArray: {  // a u16 length, then the bytes
        const std::span<const uint8_t> data = LocData(step, record);
        const auto length = static_cast<uint16_t>(data.size());
        std::memcpy(out, &length, sizeof(length));
        if (length != 0) std::memcpy(out + sizeof(length), data.data(), length);
        out += sizeof(length) + length;
        break;
      }
      default:
        out = PutFixed(record, step.offset, step.size, out);
        break;
    }
  }
  return out;
}

bool DecodePayload(const EventType& type, ByteCursor* in, std::vector<uint8_t>* record) {
  size_t static_end = schema::kCommonHeaderSize;
  for (const schema::Field& field : type.fields) {
    static_end = std::max<size_t>(static_end, size_t{field.offset} + field.size);
  }
  record->resize(schema::kCommonHeaderSize);
  record->resize(static_end, 0);
  for (const schema::Field& field : type.fields) {
    std::span<const uint8_t> bytes;
    switch (KindOf(field)) {
      case CtfFieldKind::kInteger:
      case CtfFieldKind::kCharArray:
      case CtfFieldKind::kByteArray:
        if (!in->ReadBytes(field.size, &bytes)) return false;
        std::copy(bytes.begin(), bytes.end(), record->begin() + field.offset);
        break;
      case CtfFieldKind::kDynString: {
        std::string_view text;
        if (!in->ReadCString(&text)) return false;
        // The NUL the string ends with belongs to the kernel's data too.
        bytes = {reinterpret_cast<const uint8_t*>(text.data()), text.size() + 1};
        if (!AppendLocData(field, bytes, record)) return false;
        break;
      }
      case CtfFieldKind::kDynByteArray: {
        uint16_t length;
        if (!in->Read(&length) || !in->ReadBytes(length, &bytes)) return false;
        if (!AppendLocData(field, bytes, record)) return false;
        break;
      }
    }
  }
  return true;
}

}  // namespace udiag::record::ctf
