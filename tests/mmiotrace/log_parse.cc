#include "log_parse.h"

#include <cinttypes>
#include <cstdio>
#include <sstream>

namespace udiag::mmiotrace_test {
namespace {

// A timestamp as the log prints it: secs "." exactly six digits.
bool ParseTimestamp(const char* text, double* ts) {
  unsigned secs;
  char usecs[7];
  int consumed = 0;
  if (sscanf(text, "%u.%6[0-9]%n", &secs, usecs, &consumed) != 2 || std::string(usecs).size() != 6) return false;
  *ts = secs + std::stoul(usecs) / 1e6;
  return true;
}

LogLine ParseLine(const std::string& text) {
  LogLine line;
  line.text = text;
  line.kind = text.substr(0, text.find(' '));
  const char* s = text.c_str();
  char ts[32];
  int end = 0;
  if (line.kind == "R" || line.kind == "W") {
    line.parsed = sscanf(s, "%*s %d %31s %d 0x%" SCNx64 " 0x%" SCNx64 " 0x%" SCNx64 " %d%n", &line.width, ts,
                         &line.map_id, &line.phys, &line.value, &line.pc, &line.pid, &end) == 7;
  } else if (line.kind == "MAP") {
    line.parsed = sscanf(s, "MAP %31s %d 0x%" SCNx64 " 0x%" SCNx64 " 0x%" SCNx64 " 0x%" SCNx64 " %d%n", ts,
                         &line.map_id, &line.phys, &line.virt, &line.len, &line.pc, &line.pid, &end) == 7;
  } else if (line.kind == "UNMAP") {
    line.parsed = sscanf(s, "UNMAP %31s %d 0x%" SCNx64 " %d%n", ts, &line.map_id, &line.pc, &line.pid, &end) == 4;
  } else if (line.kind == "UNKNOWN") {
    unsigned b0, b1, b2;
    line.parsed = sscanf(s, "UNKNOWN %31s %d 0x%" SCNx64 " %2x,%2x,%2x 0x%" SCNx64 " %d%n", ts, &line.map_id,
                         &line.phys, &b0, &b1, &b2, &line.pc, &line.pid, &end) == 8;
  } else if (line.kind == "MARK") {
    int start = 0;
    line.parsed = sscanf(s, "MARK %31s %n", ts, &start) == 1 && start > 0;
    if (line.parsed) line.mark = text.substr(static_cast<size_t>(start));
    end = static_cast<int>(text.size());
  } else {
    return line;
  }
  line.parsed = line.parsed && static_cast<size_t>(end) == text.size() && ParseTimestamp(ts, &line.ts);
  return line;
}

}  // namespace

std::vector<LogLine> ParseLog(const std::string& text) {
  std::vector<LogLine> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(ParseLine(line));
  return lines;
}

}  // namespace udiag::mmiotrace_test
