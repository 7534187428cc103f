// Converts one record's payload between the kernel layout (fields at their
// schema offsets, __data_loc/__rel_loc words pointing at dynamic data) and
// the CTF event payload (fields in order, dynamic data inline).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "record/ctf/byte_cursor.h"
#include "record/ctf/ctf_layout.h"

namespace udiag::record::ctf {

// How EncodePayload lays out the records of one event type, worked out once
// per type: each field's CTF kind, and fixed fields that lie back to back in
// the record (the usual payload) merged into one copy.
struct PayloadPlan {
  struct Step {
    CtfFieldKind kind;
    uint32_t offset;  // in the record
    uint32_t size;    // a fixed run's bytes, or a loc word's
    bool relative;    // a __rel_loc word
  };
  std::vector<Step> steps;
  uint32_t fixed_bytes = 0;     // of the fixed runs
  uint32_t dynamic_fields = 0;  // strings and byte arrays
  // The most bytes EncodePayload writes for a record of `record_size` bytes.
  size_t EncodedBound(size_t record_size) const { return fixed_bytes + dynamic_fields * (record_size + 2); }
};
PayloadPlan PlanPayload(const EventType& type);

// Writes the CTF payload of `record` (common header + payload) at `out`,
// which has room for plan.EncodedBound(record.size()) bytes, and returns
// where it ends. Bytes the record lacks read as zero and a loc word pointing
// outside it as empty data, so a short record still gives a well-formed
// event.
uint8_t* EncodePayload(const PayloadPlan& plan, std::span<const uint8_t> record, uint8_t* out);

// Reads one CTF payload of `type` from `in` and rebuilds the record after
// its common header, which the caller fills: static fields at their offsets
// (gaps zeroed), then the dynamic data in field order, each loc word pointing
// at its copy (strings end at their first NUL). `record` must hold at least
// the common header. Returns false on truncated or oversized input.
bool DecodePayload(const EventType& type, ByteCursor* in, std::vector<uint8_t>* record);

}  // namespace udiag::record::ctf
