// Reads a CTF trace written by ctf_writer.h back into the model, so that
// `udiag convert` can turn it into another format (e.g. trace.dat).
//
// Only our own traces are read (the exact types and task names come from the
// writer's metadata comment; other CTF traces give EINVAL). Records come
// back in timestamp order, ties in CPU order, with their kernel-layout bytes
// rebuilt: common_pid is the record's tid, and dynamic (__data_loc /
// __rel_loc) data follows the static fields in field order, strings cut at
// their first NUL. Losses come back where the writer put them: on the next
// record of the same CPU, or in TraceInfo::lost_at_end.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/error_or.h"
#include "record/trace_model.h"

namespace udiag::record::ctf {

// Opens DIR and checks every packet and event once, so that Next() on the
// result cannot meet malformed data. Returns the reader, EINVAL for a
// malformed or foreign trace, or an errno from opening the files.
base::ErrorOr<std::unique_ptr<TraceReader>> OpenCtfReader(const std::string& dir);

// The data stream files of the trace in `dir`: every regular file but
// `metadata` and hidden ones, sorted so the order does not depend on the
// file system.
base::ErrorOr<std::vector<std::string>> CtfStreamPaths(const std::string& dir);

}  // namespace udiag::record::ctf
