// EventHeader: the self-describing event convention of Microsoft's
// LinuxTracepoints (used by the .NET runtime and the OpenTelemetry user_events
// exporters), decoded from public documentation of its eventheader.h.
//
// Many events share one user_events tracepoint named
//   <Provider>_L<level hex>K<keyword hex>[<Option>...]   e.g. "MyProvider_L4K1Gmygroup"
// (each option is an uppercase letter followed by digits/lowercase letters;
// 'G' names the provider group) and registered with exactly the fields
//   u8 eventheader_flags; u8 version; u16 id; u16 tag; u8 opcode; u8 level
// Those 8 bytes are the event header. When its flags say so, extension blocks
// follow (u16 size, u16 kind with a chain bit), among them the metadata block
// (event name, then per field: name, encoding, optional format, tag and
// constant array length) and the activity id block; then the field values.
//
// Everything after the tracepoint name comes from an untrusted producer: the
// decoder checks every length, limits struct nesting, and stops at the first
// inconsistency with what it decoded so far plus an error text.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schema/event_description.h"
#include "schema/field_values.h"

namespace udiag::schema {

struct EventHeaderName {
  std::string_view provider;
  uint8_t level = 0;
  uint64_t keyword = 0;
  std::string_view options;  // "" or e.g. "Gmygroup"
  std::string_view group;    // the value of the 'G' option, or ""
};

// Splits an EventHeader tracepoint name; nullopt when it does not follow the
// grammar (level 1..ff and keyword up to 16 digits, lowercase hex without
// leading zeros; options sorted uppercase letters with [0-9a-z]* values).
std::optional<EventHeaderName> ParseEventHeaderName(std::string_view tp_name);

// Whether the tracepoint follows the convention: its name parses and its
// fields are exactly the six header fields at their places.
bool IsEventHeaderEvent(std::string_view tp_name, const std::vector<Field>& fields);

struct EventHeaderEvent {
  // The header (the six registered fields).
  uint8_t flags = 0;
  uint8_t version = 0;
  uint16_t id = 0;
  uint16_t tag = 0;
  uint8_t opcode = 0;
  uint8_t level = 0;
  bool has_metadata = false;
  std::string name;                          // from the metadata, attributes (";a=b") removed
  std::vector<uint8_t> activity_id;          // 16 bytes or empty
  std::vector<uint8_t> related_activity_id;  // 16 bytes or empty
  std::vector<TypedValue> values;            // without metadata: one "payload" kBytes value
  std::string error;                         // empty when the whole payload decoded
};

// Decodes `payload`: the record after its 8-byte common header, starting with
// the event header.
EventHeaderEvent DecodeEventHeader(std::span<const uint8_t> payload);
// The same for a whole record (8-byte common header, then the payload).
EventHeaderEvent DecodeEventHeaderRecord(std::span<const uint8_t> record);

// The decoded event in the DecodedEvent model: name (the tracepoint name when
// there is no metadata), values (plus a "decode_error" string after a
// decoding error), and as meta the header attributes that are set (id,
// version, tag, opcode, activity ids).
DecodedEvent ToDecodedEvent(const EventHeaderEvent& event, std::string_view tp_name);

// The text after "<tp_name>: " in trace lines:
//   MyEvent { x=5 msg="hi" } id=7 opcode=1 activity=<uuid>
// An event without metadata prints as "<no metadata> { payload=01,02 } ...";
// a decoding error adds " <error: why>" after the fields decoded before it.
std::string RenderEventHeaderText(const EventHeaderEvent& event);

}  // namespace udiag::schema
