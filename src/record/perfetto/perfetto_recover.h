// `udiag recover FILE` for Perfetto: the writer appends whole packets, so a
// recording killed in the middle of a write leaves at most its last packet
// torn, which protobuf readers refuse. Everything before it is whole.
#pragma once

#include <cstdint>
#include <string>

namespace udiag::record {

// Cuts the Perfetto trace at `path` after its last whole Trace.packet
// (none, when the first one is torn: an empty trace); *cut_bytes gets how
// much went. Returns 0, EINVAL when the file is empty or not a run of
// Trace.packet fields (not a trace `udiag record` wrote, or damaged before
// its end: then it is left as it is), or the errno of a failed read or
// truncation.
int CutTornPerfettoPacket(const std::string& path, uint64_t* cut_bytes);

}  // namespace udiag::record
