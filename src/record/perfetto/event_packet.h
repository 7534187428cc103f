// The packet of one record: a TrackEvent instant on its thread's track
// (perfetto_writer.h says what it holds), and the framing every packet of
// the file gets.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "record/perfetto/proto_encoder.h"
#include "record/trace_model.h"
#include "schema/field_values.h"

namespace udiag::record::perfetto {

// The TracePacket of `record`, of `type` (null when the type was never
// announced): its fields decoded and each encoded as a debug annotation.
ProtoMessage EventPacket(const EventType* type, const Record& record);
// A packet stamped `timestamp` on CLOCK_MONOTONIC, to add the rest to.
ProtoMessage TimedPacket(uint64_t timestamp);
// A debug annotation of the TrackEvent `track_event`.
void Annotate(ProtoMessage* track_event, const schema::TypedValue& value);
// An unsigned value named `name`, to annotate with.
schema::TypedValue Unsigned(std::string name, uint64_t value);
// Appends `packet`, with our sequence id, as one Trace.packet entry.
void AppendFramed(ProtoMessage* packet, std::string* out);

// The packet EventPacket makes of a record whose fields are all integers
// (most user events), encoded straight into the file's bytes from what is
// the same in every record of its type: the annotations' names, its
// category and name. No values are decoded and no message is built
// (EventPacket runs 6,500 instructions for a record of four u64s).
class IntegerEventPlan {
 public:
  // Null unless every field of `type` is an integer of 1, 2, 4 or 8 bytes
  // (an EventHeader event never is).
  static std::unique_ptr<IntegerEventPlan> For(const EventType& type);
  // Appends the framed packet of `record`, exactly as AppendFramed(
  // EventPacket) would; false, appending nothing, for a record with losses
  // before it or too short for the fields (EventPacket takes those).
  bool Append(const Record& record, std::string* out) const;

 private:
  struct FieldPlan {
    uint32_t offset;
    uint32_t size;
    bool is_signed;
    // The annotation up to its value: its name, and the value's key.
    std::string head;
  };
  std::string category_and_name_;  // the TrackEvent's entries after its track
  uint64_t record_bytes_ = 0;      // that a record must have
  std::vector<FieldPlan> fields_;
};

}  // namespace udiag::record::perfetto
