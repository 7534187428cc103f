// The binary layout our CTF 1.8 traces use, shared by the writer (which
// declares it in TSDL and encodes it) and the reader (which decodes it).
//
// Every field is byte aligned and little endian, so a packet is plain bytes:
//   packet header  : u32 magic, u8 uuid[16], u32 stream_id (always 0)
//   packet context : u64 timestamp_begin, u64 timestamp_end, u64 content_size
//                    (bits), u64 packet_size (bits), u64 packet_seq_num,
//                    u64 events_discarded (running total), u32 cpu_id
//   event header   : u32 id (the model's EventType::id), u64 timestamp
//   event context  : s32 pid, s32 tid, u8 common_flags, u8 common_preempt_count
//   event payload  : one CTF field per schema::Field (see CtfFieldKind)
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "record/trace_model.h"

namespace udiag::record::ctf {

static_assert(std::endian::native == std::endian::little, "CTF streams are written as le");

inline constexpr uint32_t kPacketMagic = 0xC1FC1FC1;
inline constexpr size_t kUuidSize = 16;

// Byte offsets inside a packet.
inline constexpr size_t kMagicAt = 0;
inline constexpr size_t kUuidAt = 4;
inline constexpr size_t kStreamIdAt = 20;
inline constexpr size_t kTimestampBeginAt = 24;
inline constexpr size_t kTimestampEndAt = 32;
inline constexpr size_t kContentSizeAt = 40;
inline constexpr size_t kPacketSizeAt = 48;
inline constexpr size_t kPacketSeqNumAt = 56;
inline constexpr size_t kEventsDiscardedAt = 64;
inline constexpr size_t kCpuIdAt = 72;
inline constexpr size_t kPacketPreambleSize = 76;  // header + context

// Event header + context bytes before the payload.
inline constexpr size_t kEventPreambleSize = 4 + 8 + 4 + 4 + 1 + 1;

// How one schema::Field is represented in the event payload.
enum class CtfFieldKind {
  kInteger,      // 1/2/4/8-byte integer, same size and signedness
  kCharArray,    // char[N]: N bytes declared as UTF-8, shown as a string
  kByteArray,    // structs, non-string static arrays, odd-sized integers: N bytes, hex
  kDynString,    // string __data_loc/__rel_loc: NUL-terminated string
  kDynByteArray, // other __data_loc/__rel_loc: u16 length field + that many bytes
};

// The representation of one field; it decides the payload bytes.
CtfFieldKind KindOf(const schema::Field& field);

// Names for the TSDL declaration of one field.
struct CtfField {
  CtfFieldKind kind;
  std::string name;         // a valid, unique TSDL identifier
  std::string length_name;  // kDynByteArray: the identifier of its length field
};

struct CtfEventLayout {
  std::string name;              // "system:name", unique in the trace, printable
  std::vector<CtfField> fields;  // one per EventType::fields entry, same order
};

// `text` as the content of a TSDL string literal: bytes outside printable
// ASCII, '"' and '\\' become '_' (exact texts are in the model comment).
std::string PrintableText(std::string_view text);

// The CTF names of every type of `types`, in the same order.
std::vector<CtfEventLayout> LayoutEvents(const std::vector<EventType>& types);

}  // namespace udiag::record::ctf
