// EventHeader names, header and extension blocks (see eventheader.h); the
// metadata and field values are decoded in eventheader_payload.cc.

#include "schema/eventheader.h"

#include <fmt/format.h>

#include <cstring>
#include <iterator>

#include "schema/eventheader_payload.h"

namespace udiag::schema {
namespace {

constexpr uint8_t kFlagLittleEndian = 0x02;
constexpr uint8_t kFlagExtension = 0x04;

constexpr uint16_t kExtensionKindMask = 0x7fff;
constexpr uint16_t kExtensionChain = 0x8000;
constexpr uint16_t kExtensionMetadata = 1;
constexpr uint16_t kExtensionActivityId = 2;

// Tracepoint names are shorter than this (EVENTHEADER_NAME_MAX).
constexpr size_t kMaxNameLength = 256;

// The six fields the convention registers, in order.
struct HeaderField {
  std::string_view name;
  uint32_t offset;
  uint32_t size;
};
constexpr HeaderField kHeaderFields[] = {
    {"eventheader_flags", 8, 1}, {"version", 9, 1}, {"id", 10, 2}, {"tag", 12, 2},
    {"opcode", 14, 1},           {"level", 15, 1},
};
constexpr size_t kHeaderSize = 8;

bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// Parses lowercase hex without leading zeros, at most `max_digits` digits,
// from the front of `text`; advances `text`.
std::optional<uint64_t> TakeHex(std::string_view* text, size_t max_digits) {
  size_t n = 0;
  uint64_t value = 0;
  while (n < text->size() && IsLowerHex((*text)[n])) {
    char c = (*text)[n];
    value = value * 16 + static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
    ++n;
  }
  if (n == 0 || n > max_digits || (n > 1 && (*text)[0] == '0')) return std::nullopt;
  text->remove_prefix(n);
  return value;
}

// Options: sorted runs of one uppercase letter plus [0-9a-z]*; returns the
// 'G' value through `group`.
bool ParseOptions(std::string_view options, std::string_view* group) {
  char previous = 0;
  while (!options.empty()) {
    char letter = options[0];
    if (letter < 'A' || letter > 'Z' || letter < previous) return false;
    size_t end = 1;
    while (end < options.size() &&
           ((options[end] >= '0' && options[end] <= '9') || (options[end] >= 'a' && options[end] <= 'z'))) {
      ++end;
    }
    if (letter == 'G') *group = options.substr(1, end - 1);
    previous = letter;
    options.remove_prefix(end);
  }
  return true;
}

// Header attributes that are set, for DecodedEvent::meta and the text form.
std::vector<TypedValue> MetaValues(const EventHeaderEvent& event) {
  std::vector<TypedValue> meta;
  for (auto [name, bits] : {std::pair<const char*, uint64_t>{"id", event.id},
                            {"version", event.version},
                            {"tag", event.tag},
                            {"opcode", event.opcode}}) {
    if (bits == 0) continue;
    TypedValue& value = meta.emplace_back();
    value.name = name;
    value.kind = ValueKind::kUnsigned;
    value.bits = bits;
  }
  for (auto [name, bytes] : {std::pair{"activity", &event.activity_id},
                             std::pair{"related_activity", &event.related_activity_id}}) {
    if (bytes->empty()) continue;
    TypedValue& value = meta.emplace_back();
    value.name = name;
    value.kind = ValueKind::kUuid;
    value.bytes = *bytes;
  }
  return meta;
}

}  // namespace

std::optional<EventHeaderName> ParseEventHeaderName(std::string_view tp_name) {
  // The provider may itself contain "_L"; the attributes follow the last '_'.
  if (tp_name.size() >= kMaxNameLength) return std::nullopt;
  size_t underscore = tp_name.rfind('_');
  if (underscore == std::string_view::npos || underscore == 0) return std::nullopt;
  EventHeaderName out;
  out.provider = tp_name.substr(0, underscore);
  std::string_view rest = tp_name.substr(underscore + 1);
  if (rest.empty() || rest[0] != 'L') return std::nullopt;
  rest.remove_prefix(1);
  auto level = TakeHex(&rest, 2);
  if (!level || *level == 0 || rest.empty() || rest[0] != 'K') return std::nullopt;
  rest.remove_prefix(1);
  auto keyword = TakeHex(&rest, 16);
  if (!keyword || !ParseOptions(rest, &out.group)) return std::nullopt;
  out.level = static_cast<uint8_t>(*level);
  out.keyword = *keyword;
  out.options = rest;
  return out;
}

bool IsEventHeaderEvent(std::string_view tp_name, const std::vector<Field>& fields) {
  if (fields.size() != std::size(kHeaderFields) || !ParseEventHeaderName(tp_name)) return false;
  for (size_t i = 0; i < fields.size(); ++i) {
    const Field& field = fields[i];
    const HeaderField& expected = kHeaderFields[i];
    if (field.name != expected.name || field.kind != FieldKind::kInteger || field.offset != expected.offset ||
        field.size != expected.size) {
      return false;
    }
  }
  return true;
}

EventHeaderEvent DecodeEventHeader(std::span<const uint8_t> payload) {
  EventHeaderEvent event;
  if (payload.size() < kHeaderSize) {
    event.error = "truncated event header";
    return event;
  }
  event.flags = payload[0];
  eventheader::Reader reader(payload, (event.flags & kFlagLittleEndian) == 0);
  reader.Take(2);  // flags and version
  event.version = payload[1];
  event.id = *reader.U16();
  event.tag = *reader.U16();
  event.opcode = *reader.U8();
  event.level = *reader.U8();

  std::vector<eventheader::FieldDef> defs;
  bool more = (event.flags & kFlagExtension) != 0;
  while (more) {
    auto size = reader.U16();
    auto kind = size ? reader.U16() : std::nullopt;
    auto block = kind ? reader.Take(*size) : std::nullopt;
    if (!block) {
      event.error = "truncated header extension";
      return event;
    }
    more = (*kind & kExtensionChain) != 0;
    uint16_t base_kind = *kind & kExtensionKindMask;
    if (base_kind == kExtensionMetadata && !event.has_metadata) {
      event.has_metadata = true;
      if (!eventheader::ParseMetadata(*block, reader.big_endian(), &event.name, &defs, &event.error)) {
        return event;
      }
    } else if (base_kind == kExtensionActivityId && (block->size() == 16 || block->size() == 32)) {
      event.activity_id.assign(block->begin(), block->begin() + 16);
      if (block->size() == 32) event.related_activity_id.assign(block->begin() + 16, block->end());
    }
  }

  if (!event.has_metadata) {
    auto rest = *reader.Take(reader.remaining());
    TypedValue& raw = event.values.emplace_back();
    raw.name = "payload";
    raw.kind = ValueKind::kBytes;
    raw.bytes.assign(rest.begin(), rest.end());
    return event;
  }
  eventheader::DecodePayload(defs, &reader, &event.values, &event.error);
  return event;
}

EventHeaderEvent DecodeEventHeaderRecord(std::span<const uint8_t> record) {
  return DecodeEventHeader(record.size() > kCommonHeaderSize ? record.subspan(kCommonHeaderSize)
                                                             : std::span<const uint8_t>());
}

DecodedEvent ToDecodedEvent(const EventHeaderEvent& event, std::string_view tp_name) {
  DecodedEvent out;
  out.name = event.has_metadata ? event.name : std::string(tp_name);
  out.values = event.values;
  if (!event.error.empty()) {
    TypedValue error;
    error.name = "decode_error";
    error.kind = ValueKind::kString;
    error.text = event.error;
    out.values.push_back(std::move(error));
  }
  out.meta = MetaValues(event);
  return out;
}

std::string RenderEventHeaderText(const EventHeaderEvent& event) {
  std::string text = event.has_metadata ? event.name : "<no metadata>";
  std::string fields = RenderValuesText(event.values);
  text += fields.empty() ? " { }" : " { " + fields + " }";
  if (!event.error.empty()) fmt::format_to(std::back_inserter(text), " <error: {}>", event.error);
  for (const TypedValue& meta : MetaValues(event)) {
    fmt::format_to(std::back_inserter(text), " {}={}", meta.name, RenderValueText(meta));
  }
  return text;
}

}  // namespace udiag::schema
