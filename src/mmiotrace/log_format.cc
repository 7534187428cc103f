#include "mmiotrace/log_format.h"

#include <fmt/format.h>

#include <charconv>
#include <vector>

namespace udiag::mmiotrace {
namespace {

// The kernel prints the trace clock as "%u.%06lu": seconds truncated to
// 32 bits, microseconds (nanoseconds rounded down).
std::string Timestamp(uint64_t ts_ns) {
  uint64_t usecs = ts_ns / 1000;
  return fmt::format("{}.{:06}", static_cast<uint32_t>(usecs / 1000000), usecs % 1000000);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

std::optional<uint64_t> ParseHex(std::string_view s) {
  s = Trim(s);
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value, 16);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

std::vector<std::string_view> SplitTabs(std::string_view line) {
  std::vector<std::string_view> fields;
  while (true) {
    size_t tab = line.find('\t');
    fields.push_back(line.substr(0, tab));
    if (tab == std::string_view::npos) break;
    line.remove_prefix(tab + 1);
  }
  return fields;
}

}  // namespace

std::string VersionLine() { return "VERSION 20070824\n"; }

std::string FormatRecord(const Record& r) {
  std::string ts = Timestamp(r.ts_ns);
  switch (r.kind) {
    case RecordKind::kRead:
    case RecordKind::kWrite:
      return fmt::format("{} {} {} {} 0x{:x} 0x{:x} 0x{:x} {}\n", r.kind == RecordKind::kRead ? 'R' : 'W', r.width,
                         ts, r.map_id, r.phys, r.value, r.pc, r.pid);
    case RecordKind::kUnknown:
      return fmt::format("UNKNOWN {} {} 0x{:x} {:02x},{:02x},{:02x} 0x{:x} {}\n", ts, r.map_id, r.phys, r.opcode[0],
                         r.opcode[1], r.opcode[2], r.pc, r.pid);
    case RecordKind::kMap:
      return fmt::format("MAP {} {} 0x{:x} 0x{:x} 0x{:x} 0x{:x} {}\n", ts, r.map_id, r.phys, r.value, r.len, r.pc,
                         r.pid);
    case RecordKind::kUnmap:
      return fmt::format("UNMAP {} {} 0x{:x} {}\n", ts, r.map_id, r.pc, r.pid);
  }
  return "";
}

std::string FormatMark(uint64_t ts_ns, std::string_view text) {
  std::string line = fmt::format("MARK {} {}", Timestamp(ts_ns), text);
  if (line.back() != '\n') line += '\n';
  return line;
}

std::string FormatLost(uint64_t count) { return fmt::format("MARK 0.000000 Lost {} events.\n", count); }

std::optional<std::string> PcidevLine(std::string_view proc_line) {
  while (!proc_line.empty() && proc_line.back() == '\n') proc_line.remove_suffix(1);
  std::vector<std::string_view> fields = SplitTabs(proc_line);
  // Slot, id, irq, 7 starts, 7 sizes, then the driver (the kernel writes the
  // tab before it even when there is none).
  if (fields.size() != 17 && fields.size() != 18) return std::nullopt;
  std::string line = "PCIDEV ";
  std::string_view slot = Trim(fields[0]), id = Trim(fields[1]);
  if (slot.size() != 4 || id.size() != 8 || !ParseHex(slot) || !ParseHex(id)) return std::nullopt;
  line += fmt::format("{} {}", slot, id);
  for (size_t i = 2; i < 17; ++i) {
    std::optional<uint64_t> value = ParseHex(fields[i]);
    if (!value) return std::nullopt;
    line += fmt::format(" {:x}", *value);
  }
  std::string_view driver = fields.size() == 18 ? Trim(fields[17]) : std::string_view();
  line += fmt::format(" {}\n", driver);
  return line;
}

std::string PcidevLines(std::string_view proc_text) {
  std::string lines;
  while (!proc_text.empty()) {
    size_t newline = proc_text.find('\n');
    if (std::optional<std::string> line = PcidevLine(proc_text.substr(0, newline))) lines += *line;
    if (newline == std::string_view::npos) break;
    proc_text.remove_prefix(newline + 1);
  }
  return lines;
}

}  // namespace udiag::mmiotrace
