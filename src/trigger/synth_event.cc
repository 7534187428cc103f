#include "trigger/synth_event.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace udiag::trigger {
namespace {

struct SynthType {
  std::string_view name;
  uint32_t size;
  std::string_view conversion;  // synth_field_fmt()
};

// The kernel's synth_field_size() and synth_field_fmt() for numbers.
constexpr SynthType kTypes[] = {
    {"s64", 8, "%lld"}, {"u64", 8, "%llu"},
    {"s32", 4, "%d"},   {"u32", 4, "%u"},
    {"s16", 2, "%d"},   {"u16", 2, "%u"},
    {"s8", 1, "%d"},    {"u8", 1, "%u"},
    {"char", 1, "%d"},  {"unsigned char", 1, "%u"},
    {"int", 4, "%d"},   {"unsigned int", 4, "%u"},
    {"short", 2, "%d"}, {"unsigned short", 2, "%u"},
    {"long", 8, "%ld"}, {"unsigned long", 8, "%lu"},
    {"bool", 1, "%d"},  {"pid_t", 4, "%d"},
};
constexpr size_t kMaxFields = 64;  // SYNTH_FIELDS_MAX

const SynthType* FindType(std::string_view name) {
  for (const SynthType& t : kTypes) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string_view Trim(std::string_view s) {
  size_t start = s.find_first_not_of(" \t\n");
  if (start == std::string_view::npos) return {};
  return s.substr(start, s.find_last_not_of(" \t\n") - start + 1);
}

bool IsName(std::string_view s) {
  return !s.empty() && !(s[0] >= '0' && s[0] <= '9') && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

int ParseSynthEvent(std::string_view text, schema::EventDescription* out) {
  text = Trim(text);
  size_t space = text.find_first_of(" \t");
  *out = {};
  out->name = std::string(text.substr(0, space));
  if (!IsName(out->name) || space == std::string_view::npos) return EINVAL;
  text.remove_prefix(space);
  uint32_t offset = schema::kCommonHeaderSize;
  while (!text.empty()) {
    size_t semi = text.find(';');
    std::string_view decl = Trim(text.substr(0, semi));
    text.remove_prefix(semi == std::string_view::npos ? text.size() : semi + 1);
    if (decl.empty()) continue;
    size_t last = decl.find_last_of(" \t");
    if (last == std::string_view::npos) return EINVAL;
    std::string_view name = decl.substr(last + 1);
    const SynthType* type = FindType(Trim(decl.substr(0, last)));
    if (!type || !IsName(name) || out->fields.size() == kMaxFields) return EINVAL;
    for (const schema::Field& f : out->fields) {
      if (f.name == name) return EINVAL;
    }
    // synth_field_signed(): unsigned when the type starts with 'u'.
    out->fields.push_back({std::string(type->name), std::string(name), schema::FieldKind::kInteger, offset,
                           type->size, !type->name.starts_with('u'), false});
    offset += sizeof(uint64_t);  // every field has a u64 slot
  }
  if (out->fields.empty()) return EINVAL;
  out->min_size = offset - schema::kCommonHeaderSize;
  return 0;
}

std::string SynthEventLine(const schema::EventDescription& event) {
  std::string line = event.name + "\t";
  for (size_t i = 0; i < event.fields.size(); ++i) {
    line += (i ? "; " : "") + event.fields[i].type + " " + event.fields[i].name;
  }
  return line + "\n";
}

std::string SynthPrintFmt(const std::vector<schema::Field>& fields) {
  std::string text = "\"", args;
  for (size_t i = 0; i < fields.size(); ++i) {
    const SynthType* type = FindType(fields[i].type);
    text += fmt::format("{}{}={}", i ? ", " : "", fields[i].name, type ? type->conversion : "%llu");
    args += ", REC->" + fields[i].name;
  }
  return text + "\"" + args;
}

std::string RenderSynthFields(const std::vector<schema::Field>& fields, std::span<const uint8_t> record) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    const schema::Field& f = fields[i];
    uint64_t raw = 0;
    if (f.offset + uint64_t{f.size} <= record.size() && f.size <= sizeof(raw)) {
      std::memcpy(&raw, record.data() + f.offset, f.size);
    }
    if (i) out += ' ';
    if (f.is_signed) {
      const int shift = 64 - 8 * static_cast<int>(f.size);
      out += fmt::format("{}={}", f.name, static_cast<int64_t>(raw << shift) >> shift);
    } else {
      out += fmt::format("{}={}", f.name, raw);
    }
  }
  return out;
}

std::vector<uint8_t> SynthRecord(uint16_t id, int32_t pid, const std::vector<schema::Field>& fields,
                                 std::span<const uint64_t> values) {
  std::vector<uint8_t> record(schema::kCommonHeaderSize + sizeof(uint64_t) * fields.size(), 0);
  std::memcpy(record.data(), &id, sizeof(id));
  std::memcpy(record.data() + 4, &pid, sizeof(pid));
  for (size_t i = 0; i < fields.size() && i < values.size(); ++i) {
    // The value truncated to the field's size, at the start of its slot (little-endian).
    std::memcpy(record.data() + fields[i].offset, &values[i], fields[i].size);
  }
  return record;
}

}  // namespace udiag::trigger
