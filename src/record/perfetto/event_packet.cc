#include "record/perfetto/event_packet.h"

#include <cstring>
#include <memory>

#include "base/short_copy.h"
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

void AppendFramed(ProtoMessage* packet, uint64_t sequence_id, std::string* out) {
  packet->Varint(packet::kSequenceId, sequence_id);
  ProtoMessage framed;
  framed.Message(trace::kPacket, *packet);
  *out += framed.bytes();
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
  base::CopyShort(reinterpret_cast<uint8_t*>(at), reinterpret_cast<const uint8_t*>(bytes.data()),
                  bytes.size());
  return at + bytes.size();
}

constexpr size_t kMaxVarintBytes = 10;

}  // namespace

std::unique_ptr<IntegerEventPlan> IntegerEventPlan::For(const EventType& type) {
  if (schema::IsEventHeaderEvent(type.name, type.fields)) return nullptr;
  auto plan = std::make_unique<IntegerEventPlan>();
  ProtoMessage category_and_name;
  category_and_name.Bytes(event::kCategories, type.system);
  category_and_name.Bytes(event::kName, type.name);
  plan->category_and_name_ = category_and_name.bytes();
  plan->fixed_track_event_bytes_ = VarintEntrySize(event::kType, event::kInstant) +
                                   VarintSize(KeyOf(event::kTrackUuid, kWireVarint)) +
                                   plan->category_and_name_.size();
  // Besides those: the track, each annotation's length and value, the
  // packet's entries and the two lengths around it, and a short head's padding.
  plan->max_bytes_ = 9 * kMaxVarintBytes + kShortHead;
  if (type.fields.size() > kMaxFields) return nullptr;
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
    plan->fixed_track_event_bytes_ += VarintSize(KeyOf(event::kDebugAnnotations, kWireLength)) + head.size();
    plan->max_bytes_ += 2 * kMaxVarintBytes;
    const auto head_size = static_cast<uint32_t>(head.size());
    head.resize(std::max<size_t>(head.size(), kShortHead));
    plan->fields_.push_back({field.offset, field.size, field.is_signed, std::move(head), head_size});
    plan->record_bytes_ = std::max(plan->record_bytes_, uint64_t{field.offset} + field.size);
  }
  plan->max_bytes_ += plan->fixed_track_event_bytes_;
  return plan;
}

char* IntegerEventPlan::Write(const Record& record, char* at) const {
  if (record.lost_before > 0 || record.data.size() < record_bytes_) return nullptr;
  const uint8_t* const data = record.data.data();
  uint64_t values[kMaxFields];
  // Sized from the inside out, then written from the outside in.
  const uint64_t track = kThreadTrackBase + record.tid;
  const uint64_t sequence = EventSequenceId(record.cpu);
  size_t track_event = fixed_track_event_bytes_ + VarintSize(track);
  for (size_t i = 0; i < fields_.size(); ++i) {
    const FieldPlan& field = fields_[i];
    values[i] = schema::IntegerBits(data + field.offset, field.size, field.is_signed);
    const size_t value_bytes = VarintSize(values[i]);
    track_event += VarintSize(field.head_size + value_bytes) + value_bytes;
  }
  const size_t packet = VarintEntrySize(packet::kTimestamp, record.timestamp) +
                        VarintEntrySize(packet::kTimestampClockId, clock::kMonotonic) +
                        LengthHeadSize(packet::kTrackEvent, track_event) + track_event +
                        VarintEntrySize(packet::kSequenceId, sequence);

  at = PutLengthHead(at, trace::kPacket, packet);
  at = PutVarintEntry(at, packet::kTimestamp, record.timestamp);
  at = PutVarintEntry(at, packet::kTimestampClockId, clock::kMonotonic);
  at = PutLengthHead(at, packet::kTrackEvent, track_event);
  at = PutVarintEntry(at, event::kType, event::kInstant);
  at = PutVarintEntry(at, event::kTrackUuid, track);
  at = PutBytes(at, category_and_name_);
  for (size_t i = 0; i < fields_.size(); ++i) {
    const FieldPlan& field = fields_[i];
    at = PutLengthHead(at, event::kDebugAnnotations, field.head_size + VarintSize(values[i]));
    if (field.head_size <= kShortHead) {
      std::memcpy(at, field.head.data(), kShortHead);  // with its padding: one size, no branches
      at += field.head_size;
    } else {
      at = PutBytes(at, {field.head.data(), field.head_size});
    }
    at = PutVarint(at, values[i]);
  }
  return PutVarintEntry(at, packet::kSequenceId, sequence);
}

}  // namespace udiag::record::perfetto
