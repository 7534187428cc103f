// Which file format a trace is in, and opening a writer or reader for it:
// what `udiag record`, `report` and `convert` share.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/error_or.h"
#include "record/trace_model.h"

namespace udiag::record {

enum class TraceFormat { kTraceDat, kCtf, kPerfetto };

// "dat", "ctf" or "perfetto".
std::optional<TraceFormat> ParseTraceFormat(std::string_view name);
std::string_view TraceFormatName(TraceFormat format);

// The format an output path asks for by its name: *.pftrace and
// *.perfetto-trace are Perfetto, *.ctf or an existing directory CTF, anything
// else trace.dat.
TraceFormat FormatForOutput(const std::string& path);

// trace.dat: a file; CTF: a directory (created); Perfetto: a file.
base::ErrorOr<std::unique_ptr<TraceWriter>> OpenTraceWriter(TraceFormat format, const std::string& path);

// The format of an existing trace, by its content: a directory with a CTF
// `metadata` file, a file with trace.dat's magic, or one that starts with a
// Perfetto Trace.packet; nullopt for anything else.
std::optional<TraceFormat> TraceFormatOf(const std::string& path);

// Opens a trace we wrote, recognising its format by content: a directory
// with a CTF `metadata` file, or a trace.dat file. Perfetto files cannot be
// read back (their fields are annotations, not records): ENOTSUP. EINVAL for
// anything else.
base::ErrorOr<std::unique_ptr<TraceReader>> OpenTraceReader(const std::string& path);

}  // namespace udiag::record
