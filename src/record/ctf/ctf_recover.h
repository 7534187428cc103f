// `udiag recover DIR` for CTF: a recording killed in the middle of writing a
// packet leaves that packet torn at the end of its stream file, which
// babeltrace2 refuses. Everything before it is whole (ctf_writer.h).
#pragma once

#include <cstdint>
#include <string>

namespace udiag::record::ctf {

// Cuts every stream file of the CTF trace in `dir` after its last whole
// packet; *cut_bytes gets how much went. Returns 0, EINVAL when `dir` has
// no metadata, or the errno of a failed read or truncation.
int CutTornPackets(const std::string& dir, uint64_t* cut_bytes);

}  // namespace udiag::record::ctf
