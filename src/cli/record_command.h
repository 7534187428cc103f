// `udiag record`: events from every process into a trace file, through a
// record-session instance of its own; `udiag report` and `udiag convert`
// read such files back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "record/trace_files.h"

namespace udiag::cli {

// What a bare `udiag record --block` waits at most, in ms.
inline constexpr uint32_t kDefaultBlockMs = 1000;

struct RecordOptions {
  std::string dir;                   // resolved; a private daemon is started if none serves it
  std::vector<std::string> events;   // auto-enable globs; empty: every event
  std::vector<std::string> filters;  // filters[i] for events[i] ("": none), in the recording instance
  std::string output = "trace.dat";
  std::optional<record::TraceFormat> format;  // default: from the output's name
  bool overwrite = false;            // flight recorder: keep the newest, write at the end
  // The instance buffer, in KiB. Larger than an instance's default: it
  // rides out the recorder's stalls (its start, its disk) at 10 M events/s,
  // where 4 MiB lost events (docs/performance-history.md).
  uint32_t size_kb = 16384;
  // The instance's blocking_timeout_ms: producers wait up to this long for
  // room instead of dropping (0: they drop, as with the kernel).
  uint32_t block_ms = 0;
  std::vector<std::string> command;  // empty: record until SIGINT/SIGTERM
};

// Returns the command's exit status (128 + signal if it was killed), 0 when
// interrupted without a command, 127/126 when the command cannot be run, or
// kExitFailure.
int Record(const RecordOptions& options);

// Prints a trace file as text (like `trace-cmd report`) or, with `json`, as
// one JSON object per record.
int Report(const std::string& path, bool json);

// Reads IN (trace.dat or CTF) and writes OUT in `format` (default: from OUT's name).
int Convert(const std::string& in, const std::string& out, std::optional<record::TraceFormat> format);

}  // namespace udiag::cli
