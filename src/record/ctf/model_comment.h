// The model facts TSDL cannot carry exactly (kernel type spellings, field
// offsets and flags, raw event and task names, the trace info), kept in a
// comment at the end of the metadata so our reader rebuilds the model
// byte for byte while other CTF readers skip it. One item per line, tokens
// separated by spaces, text tokens written as '=' plus %XX-escaped bytes:
//
//   /* udiag-model 1
//   uuid <32 hex digits>
//   info <cpus> <clock> <hostname>
//   type <id> <system> <name>
//   field <kind> <offset> <size> <signed> <string> <type> <name>   (of the last type)
//   task <pid> <tid> <comm>
//   */
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "record/ctf/ctf_layout.h"
#include "record/trace_model.h"

namespace udiag::record::ctf {

struct TraceModel {
  std::array<uint8_t, kUuidSize> uuid{};
  TraceInfo info;  // lost_at_end is not part of it: losses live in the packets
  std::vector<EventType> types;
  std::vector<Task> tasks;
};

std::string ModelComment(const TraceModel& model);

// Finds and parses the comment in `metadata`. Returns 0, or EINVAL when it
// is missing or malformed, or describes a type our reader cannot rebuild
// (duplicate ids, fields outside kMaxRecordSize, loc words not 4 bytes).
int ParseModelComment(std::string_view metadata, TraceModel* out);

// Largest record (common header + static fields) a type may describe.
inline constexpr uint32_t kMaxRecordSize = 1 << 20;

}  // namespace udiag::record::ctf
