// Writing and parsing the udiag-model comment (format in the header).

#include "record/ctf/model_comment.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <iterator>
#include <set>

namespace udiag::record::ctf {
namespace {

constexpr std::string_view kBegin = "/* udiag-model 1\n";
constexpr std::string_view kEnd = "*/";

bool IsPlainByte(char c) { return c > 0x20 && c < 0x7f && c != '%' && c != '*'; }

std::string TextToken(std::string_view text) {
  std::string token = "=";
  for (char c : text) {
    if (IsPlainByte(c)) {
      token += c;
    } else {
      fmt::format_to(std::back_inserter(token), "%{:02X}", static_cast<uint8_t>(c));
    }
  }
  return token;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool ParseText(std::string_view token, std::string* out) {
  if (!token.starts_with('=')) return false;
  out->clear();
  for (size_t i = 1; i < token.size(); ++i) {
    if (token[i] != '%') {
      out->push_back(token[i]);
      continue;
    }
    if (i + 2 >= token.size()) return false;
    int high = HexDigit(token[i + 1]), low = HexDigit(token[i + 2]);
    if (high < 0 || low < 0) return false;
    out->push_back(static_cast<char>(high << 4 | low));
    i += 2;
  }
  return true;
}

template <typename T>
bool ParseNumber(std::string_view token, T* out) {
  auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), *out);
  return error == std::errc() && end == token.data() + token.size();
}

std::vector<std::string_view> SplitTokens(std::string_view line) {
  std::vector<std::string_view> tokens;
  while (!line.empty()) {
    size_t space = line.find(' ');
    tokens.push_back(line.substr(0, space));
    line.remove_prefix(space == std::string_view::npos ? line.size() : space + 1);
  }
  return tokens;
}

bool ParseUuid(std::string_view hex, std::array<uint8_t, kUuidSize>* out) {
  if (hex.size() != 2 * kUuidSize) return false;
  for (size_t i = 0; i < kUuidSize; ++i) {
    int high = HexDigit(hex[2 * i]), low = HexDigit(hex[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    (*out)[i] = static_cast<uint8_t>(high << 4 | low);
  }
  return true;
}

bool ParseField(const std::vector<std::string_view>& t, schema::Field* field) {
  unsigned kind, is_signed, is_string;
  if (t.size() != 8 || !ParseNumber(t[1], &kind) || !ParseNumber(t[2], &field->offset) ||
      !ParseNumber(t[3], &field->size) || !ParseNumber(t[4], &is_signed) ||
      !ParseNumber(t[5], &is_string) || !ParseText(t[6], &field->type) ||
      !ParseText(t[7], &field->name)) {
    return false;
  }
  if (kind > static_cast<unsigned>(schema::FieldKind::kStruct) || is_signed > 1 || is_string > 1) {
    return false;
  }
  field->kind = static_cast<schema::FieldKind>(kind);
  field->is_signed = is_signed;
  field->is_string = is_string;
  bool is_loc = field->kind == schema::FieldKind::kDataLoc || field->kind == schema::FieldKind::kRelLoc;
  return field->offset >= schema::kCommonHeaderSize && field->size > 0 &&
         uint64_t{field->offset} + field->size <= kMaxRecordSize && (!is_loc || field->size == 4);
}

// One line of the comment into `out`; false if it is malformed.
bool ParseLine(std::string_view line, TraceModel* out, std::set<uint32_t>* type_ids) {
  std::vector<std::string_view> t = SplitTokens(line);
  if (t.empty()) return false;
  if (t[0] == "uuid") return t.size() == 2 && ParseUuid(t[1], &out->uuid);
  if (t[0] == "info") {
    return t.size() == 4 && ParseNumber(t[1], &out->info.cpus) && ParseText(t[2], &out->info.clock) &&
           ParseText(t[3], &out->info.hostname);
  }
  if (t[0] == "type") {
    EventType type;
    if (t.size() != 4 || !ParseNumber(t[1], &type.id) || !ParseText(t[2], &type.system) ||
        !ParseText(t[3], &type.name) || !type_ids->insert(type.id).second) {
      return false;
    }
    out->types.push_back(std::move(type));
    return true;
  }
  if (t[0] == "field") {
    schema::Field field;
    if (out->types.empty() || !ParseField(t, &field)) return false;
    out->types.back().fields.push_back(std::move(field));
    return true;
  }
  if (t[0] == "task") {
    Task task;
    if (t.size() != 4 || !ParseNumber(t[1], &task.pid) || !ParseNumber(t[2], &task.tid) ||
        !ParseText(t[3], &task.comm)) {
      return false;
    }
    out->tasks.push_back(std::move(task));
    return true;
  }
  return false;
}

}  // namespace

std::string ModelComment(const TraceModel& model) {
  std::string text(kBegin);
  auto out = std::back_inserter(text);
  fmt::format_to(out, "uuid {:02x}\n", fmt::join(model.uuid, ""));
  fmt::format_to(out, "info {} {} {}\n", model.info.cpus, TextToken(model.info.clock),
                 TextToken(model.info.hostname));
  for (const EventType& type : model.types) {
    fmt::format_to(out, "type {} {} {}\n", type.id, TextToken(type.system), TextToken(type.name));
    for (const schema::Field& f : type.fields) {
      fmt::format_to(out, "field {} {} {} {:d} {:d} {} {}\n", static_cast<int>(f.kind), f.offset, f.size,
                     f.is_signed, f.is_string, TextToken(f.type), TextToken(f.name));
    }
  }
  for (const Task& task : model.tasks) {
    fmt::format_to(out, "task {} {} {}\n", task.pid, task.tid, TextToken(task.comm));
  }
  text += kEnd;
  text += '\n';
  return text;
}

int ParseModelComment(std::string_view metadata, TraceModel* out) {
  size_t begin = metadata.find(kBegin);
  if (begin == std::string_view::npos) return EINVAL;
  std::string_view rest = metadata.substr(begin + kBegin.size());
  TraceModel model;
  std::set<uint32_t> type_ids;
  bool saw_uuid = false, saw_info = false;
  while (true) {
    size_t newline = rest.find('\n');
    if (newline == std::string_view::npos) return EINVAL;
    std::string_view line = rest.substr(0, newline);
    rest.remove_prefix(newline + 1);
    if (line == kEnd) break;
    saw_uuid |= line.starts_with("uuid ");
    saw_info |= line.starts_with("info ");
    if (!ParseLine(line, &model, &type_ids)) return EINVAL;
  }
  if (!saw_uuid || !saw_info) return EINVAL;
  *out = std::move(model);
  return 0;
}

}  // namespace udiag::record::ctf
