// Reading an mmiotrace log back in the tests: each line split into the
// fields of its kind (spec/kmmio.md §4).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace udiag::mmiotrace_test {

struct LogLine {
  std::string kind;   // VERSION, PCIDEV, MAP, UNMAP, R, W, UNKNOWN, MARK
  std::string text;   // the whole line, without its newline
  int width = 0;      // R, W
  double ts = 0;      // seconds
  int map_id = 0;
  uint64_t phys = 0, value = 0, virt = 0, len = 0, pc = 0;
  int pid = 0;
  std::string mark;   // MARK: the text after the timestamp
  bool parsed = false;  // the fields matched the kind's format
};

std::vector<LogLine> ParseLog(const std::string& text);

}  // namespace udiag::mmiotrace_test
