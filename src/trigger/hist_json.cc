#include "trigger/hist_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace udiag::trigger {
namespace {

std::string_view Trim(std::string_view s) {
  size_t start = s.find_first_not_of(' ');
  if (start == std::string_view::npos) return {};
  return s.substr(start, s.find_last_not_of(' ') - start + 1);
}

std::string Quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

bool IsNumber(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string JsonValue(std::string_view text) { return IsNumber(text) ? std::string(text) : Quoted(text); }

// The key names of "hist:[name=N:]keys=a.hex,b:vals=...", modifiers dropped.
std::vector<std::string> KeyNames(std::string_view info) {
  std::vector<std::string> names;
  size_t at = info.find("keys=");
  if (at == std::string_view::npos) return names;
  std::string_view keys = info.substr(at + 5);
  keys = keys.substr(0, keys.find(':'));
  while (!keys.empty()) {
    std::string_view item = keys.substr(0, keys.find(','));
    names.emplace_back(item.substr(0, item.find('.')));
    keys.remove_prefix(std::min(keys.size(), item.size() + 1));
  }
  return names;
}

// "{ a: x, b: y } hitcount:  N  v:  M" -> "{"a": x, "b": y, "hitcount": N, "v": M}".
std::string EntryJson(std::string_view line, const std::vector<std::string>& keys) {
  size_t close = line.find(" } hitcount:");
  if (close == std::string_view::npos) return {};
  std::string_view key_part = line.substr(2, close - 2);
  std::vector<std::string> members;
  size_t pos = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    size_t start = key_part.find(keys[i] + ": ", pos);
    if (start == std::string_view::npos) return {};
    start += keys[i].size() + 2;
    size_t end = i + 1 < keys.size() ? key_part.find(", " + keys[i + 1] + ": ", start) : key_part.size();
    if (end == std::string_view::npos) return {};
    members.push_back(Quoted(keys[i]) + ": " + JsonValue(Trim(key_part.substr(start, end - start))));
    pos = end;
  }
  std::string_view vals = line.substr(close + 3);
  while (!vals.empty()) {
    vals = vals.substr(std::min(vals.size(), vals.find_first_not_of(' ')));
    size_t colon = vals.find(": ");
    if (colon == std::string_view::npos) break;
    std::string_view name = vals.substr(0, colon);
    vals.remove_prefix(colon + 2);
    vals = vals.substr(std::min(vals.size(), vals.find_first_not_of(' ')));
    std::string_view number = vals.substr(0, vals.find(' '));
    members.push_back(Quoted(name) + ": " + JsonValue(number));
    vals.remove_prefix(number.size());
  }
  std::string out = "{";
  for (size_t i = 0; i < members.size(); ++i) out += (i ? ", " : "") + members[i];
  return out + "}";
}

std::string_view After(std::string_view line, std::string_view prefix) {
  return line.starts_with(prefix) ? line.substr(prefix.size()) : std::string_view();
}

}  // namespace

std::string HistTablesToJson(std::string_view hist_file) {
  std::vector<std::string> tables;
  std::string trigger, totals;
  std::vector<std::string> entries, keys;
  auto finish = [&] {
    if (trigger.empty()) return;
    std::string out = "{\"trigger\": " + Quoted(trigger) + ", \"entries\": [";
    for (size_t i = 0; i < entries.size(); ++i) out += (i ? ", " : "") + entries[i];
    tables.push_back(out + "], \"totals\": {" + totals + "}}");
    trigger.clear();
    totals.clear();
    entries.clear();
  };
  while (!hist_file.empty()) {
    std::string_view line = hist_file.substr(0, hist_file.find('\n'));
    hist_file.remove_prefix(std::min(hist_file.size(), line.size() + 1));
    if (auto info = After(line, "# trigger info: "); !info.empty()) {
      finish();
      trigger = std::string(info);
      keys = KeyNames(info);
    } else if (line.starts_with("{ ")) {
      if (std::string e = EntryJson(line, keys); !e.empty()) entries.push_back(std::move(e));
    } else if (auto hits = After(line, "    Hits: "); !hits.empty()) {
      totals = "\"hits\": " + JsonValue(hits);
    } else if (auto n = After(line, "    Entries: "); !n.empty()) {
      totals += ", \"entries\": " + JsonValue(n);
    } else if (auto d = After(line, "    Dropped: "); !d.empty()) {
      totals += ", \"dropped\": " + JsonValue(d);
    }
  }
  finish();
  std::string out = "[";
  for (size_t i = 0; i < tables.size(); ++i) out += (i ? ",\n " : "") + tables[i];
  return out + "]\n";
}

}  // namespace udiag::trigger
