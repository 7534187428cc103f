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
// Appends `packet`, on sequence `sequence_id` (perfetto_fields.h), as one
// Trace.packet entry.
void AppendFramed(ProtoMessage* packet, uint64_t sequence_id, std::string* out);

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
  // The room Write needs for one record.
  size_t max_bytes() const { return max_bytes_; }
  // Writes the framed packet of `record` at `at`, which has max_bytes() of
  // room, exactly as AppendFramed(EventPacket) on the record's cpu's
  // sequence would, and returns its end
  // (the room after it may have been written to as well);
  // null, writing nothing, for a record with losses before it or too short
  // for the fields (EventPacket takes those).
  char* Write(const Record& record, char* at) const;

 private:
  // Heads up to this long are copied whole, padding and all, in two moves.
  static constexpr size_t kShortHead = 32;
  // Types with more fields go to EventPacket, so that Write keeps each
  // value on its stack between sizing and writing.
  static constexpr size_t kMaxFields = 64;
  struct FieldPlan {
    uint32_t offset;
    uint32_t size;
    bool is_signed;
    // The annotation up to its value (its name, and the value's key), in
    // head_size bytes, then zeros up to kShortHead at least.
    std::string head;
    uint32_t head_size;
  };
  // The TrackEvent's bytes that are the same in every record: the type
  // entry, the track's key, the category and name after the track, and
  // each annotation's key, length byte and head.
  size_t fixed_track_event_bytes_ = 0;
  std::string category_and_name_;  // the TrackEvent's entries after its track
  uint64_t record_bytes_ = 0;      // that a record must have
  size_t max_bytes_ = 0;
  std::vector<FieldPlan> fields_;
};

}  // namespace udiag::record::perfetto
