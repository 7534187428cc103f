// mmiotrace's text log (version 20070824), line by line, exactly as the
// kernel's tracer prints it (spec/kmmio.md §4): decimal widths and ids,
// "0x"-prefixed unpadded hex, timestamps as seconds "." 6-digit microseconds.
// Unlike the kernel, pc and pid are real (user space has both).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "mmiotrace/record.h"

namespace udiag::mmiotrace {

// "VERSION 20070824\n"
std::string VersionLine();

// An R, W, UNKNOWN, MAP or UNMAP line for `record`, with its newline.
std::string FormatRecord(const Record& record);

// "MARK <secs>.<usecs> <text>": the text carries its own newline in the
// kernel; one is added when it has none.
std::string FormatMark(uint64_t ts_ns, std::string_view text);

// "MARK 0.000000 Lost <count> events.\n"
std::string FormatLost(uint64_t count);

// The PCIDEV line for one line of /proc/bus/pci/devices (tab-separated,
// padded hex) — the same data in mmiotrace's form. nullopt when the line
// does not have that file's 17 or 18 fields.
std::optional<std::string> PcidevLine(std::string_view proc_line);

// Every PCIDEV line for a /proc/bus/pci/devices text, in its order.
std::string PcidevLines(std::string_view proc_text);

}  // namespace udiag::mmiotrace
