#include "record/perfetto/event_packet.h"

#include <cstring>
#include <memory>

#include "record/perfetto/debug_annotation.h"
#include "record/perfetto/perfetto_fields.h"
#include "record/perfetto/perfetto_writer.h"
#include "schema/eventheader.h"

namespace udiag::record::perfetto {

ProtoMessage EventPacket(const EventType* type, const Record& record) {
  ProtoMessage track_event;
  track_event.Varint(event::kType, event::kInstant);
  track_event.Varint(event::kTrackUuid, kThreadTrackBase + record.tid);
  if (type) {
    schema::DecodedEvent decoded = schema::DecodeFields(type->name, type->fields, record.data);
    track_event.Bytes(event::kCategories, type->system);
    track_event.Bytes(event::kName, decoded.name);
    for (const schema::TypedValue& value : decoded.values) Annotate(&track_event, value);
    if (!decoded.meta.empty()) {
      schema::TypedValue meta;
      meta.name = "meta";
      meta.kind = schema::ValueKind::kStruct;
      meta.items = std::move(decoded.meta);
      Annotate(&track_event, meta);
    }
  } else {
    // A record whose type was never announced: keep its bytes visible.
    schema::TypedValue raw;
    raw.name = "raw";
    raw.kind = schema::ValueKind::kBytes;
    raw.bytes.assign(record.data.begin(), record.data.end());
    track_event.Bytes(event::kCategories, "unknown");
    track_event.Bytes(event::kName, "event " + std::to_string(record.event_id));
    Annotate(&track_event, raw);
  }
  if (record.lost_before > 0) Annotate(&track_event, Unsigned("lost_events_before", record.lost_before));

  ProtoMessage packet = TimedPacket(record.timestamp);
  packet.Message(packet::kTrackEvent, track_event);
  if (record.lost_before > 0) packet.Varint(packet::kPreviousPacketDropped, 1);
  return packet;
}

ProtoMessage TimedPacket(uint64_t timestamp) {
  ProtoMessage packet;
  packet.Varint(packet::kTimestamp, timestamp);
  packet.Varint(packet::kTimestampClockId, clock::kMonotonic);
  return packet;
}

void Annotate(ProtoMessage* track_event, const schema::TypedValue& value) {
  track_event->Message(event::kDebugAnnotations, EncodeDebugAnnotation(value));
}

schema::TypedValue Unsigned(std::string name, uint64_t value) {
  schema::TypedValue out;
  out.name = std::move(name);
  out.kind = schema::ValueKind::kUnsigned;
  out.bits = value;
  return out;
}

void AppendFramed(ProtoMessage* packet, std::string* out) {
  packet->Varint(packet::kSequenceId, kSequenceId);
  ProtoMessage framed;
  framed.Message(trace::kPacket, *packet);
  *out += framed.bytes();
}

std::unique_ptr<IntegerEventPlan> IntegerEventPlan::For(const EventType& type) {
  if (schema::IsEventHeaderEvent(type.name, type.fields)) return nullptr;
  auto plan = std::make_unique<IntegerEventPlan>();
  ProtoMessage category_and_name;
  category_and_name.Bytes(event::kCategories, type.system);
  category_and_name.Bytes(event::kName, type.name);
  plan->category_and_name_ = category_and_name.bytes();
  for (const schema::Field& field : type.fields) {
    if (field.kind != schema::FieldKind::kInteger ||
        (field.size != 1 && field.size != 2 && field.size != 4 && field.size != 8)) {
      return nullptr;
    }
    // The annotation of a zero ends in its value's one byte: the rest is
    // the same for every value.
    schema::TypedValue zero;
    zero.name = field.name;
    zero.kind = field.is_signed ? schema::ValueKind::kSigned : schema::ValueKind::kUnsigned;
    std::string head = EncodeDebugAnnotation(zero).bytes();
    head.pop_back();
    plan->fields_.push_back({field.offset, field.size, field.is_signed, std::move(head)});
    plan->record_bytes_ = std::max(plan->record_bytes_, uint64_t{field.offset} + field.size);
  }
  return plan;
}

namespace {

// A key and a varint value, sized or written.
constexpr size_t VarintEntrySize(uint32_t field, uint64_t value) {
  return VarintSize(KeyOf(field, kWireVarint)) + VarintSize(value);
}
char* PutVarintEntry(char* at, uint32_t field, uint64_t value) {
  return PutVarint(PutVarint(at, KeyOf(field, kWireVarint)), value);
}
// A key and a length, before `length` bytes.
constexpr size_t LengthHeadSize(uint32_t field, uint64_t length) {
  return VarintSize(KeyOf(field, kWireLength)) + VarintSize(length);
}
char* PutLengthHead(char* at, uint32_t field, uint64_t length) {
  return PutVarint(PutVarint(at, KeyOf(field, kWireLength)), length);
}
char* PutBytes(char* at, std::string_view bytes) {
  std::memcpy(at, bytes.data(), bytes.size());
  return at + bytes.size();
}

}  // namespace

bool IntegerEventPlan::Append(const Record& record, std::string* out) const {
  if (record.lost_before > 0 || record.data.size() < record_bytes_) return false;
  const uint8_t* const data = record.data.data();
  // Sized from the inside out, then written from the outside in.
  size_t annotations = 0;
  for (const FieldPlan& field : fields_) {
    const size_t bytes =
        field.head.size() + VarintSize(schema::IntegerBits(data + field.offset, field.size, field.is_signed));
    annotations += LengthHeadSize(event::kDebugAnnotations, bytes) + bytes;
  }
  const uint64_t track = kThreadTrackBase + record.tid;
  const size_t track_event = VarintEntrySize(event::kType, event::kInstant) +
                             VarintEntrySize(event::kTrackUuid, track) + category_and_name_.size() +
                             annotations;
  const size_t packet = VarintEntrySize(packet::kTimestamp, record.timestamp) +
                        VarintEntrySize(packet::kTimestampClockId, clock::kMonotonic) +
                        LengthHeadSize(packet::kTrackEvent, track_event) + track_event +
                        VarintEntrySize(packet::kSequenceId, kSequenceId);
  const size_t framed = LengthHeadSize(trace::kPacket, packet) + packet;

  const size_t start = out->size();
  out->resize(start + framed);
  char* at = out->data() + start;
  at = PutLengthHead(at, trace::kPacket, packet);
  at = PutVarintEntry(at, packet::kTimestamp, record.timestamp);
  at = PutVarintEntry(at, packet::kTimestampClockId, clock::kMonotonic);
  at = PutLengthHead(at, packet::kTrackEvent, track_event);
  at = PutVarintEntry(at, event::kType, event::kInstant);
  at = PutVarintEntry(at, event::kTrackUuid, track);
  at = PutBytes(at, category_and_name_);
  for (const FieldPlan& field : fields_) {
    const uint64_t value = schema::IntegerBits(data + field.offset, field.size, field.is_signed);
    at = PutLengthHead(at, event::kDebugAnnotations, field.head.size() + VarintSize(value));
    at = PutVarint(PutBytes(at, field.head), value);
  }
  PutVarintEntry(at, packet::kSequenceId, kSequenceId);
  return true;
}

}  // namespace udiag::record::perfetto
