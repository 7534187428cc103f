// What a user event is made of: its name and typed fields, parsed from the
// registration command, and every text the kernel derives from them.
//
// Behaviour follows ../shared/spec/user_events.md; section numbers (§) refer
// to it. Parser quirks the kernel has are kept on purpose (see docs/compat.md).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace udiag::schema {

// Size of the common header (common_type, flags, preempt_count, pid) that
// precedes the payload in every record.
inline constexpr uint32_t kCommonHeaderSize = 8;

// Longest registration command accepted through DIAG_IOCSREG, NUL included.
inline constexpr size_t kMaxCommandBytes = 512;

enum class FieldKind {
  kInteger,       // s8..u64, char, short, int and their unsigned forms
  kStaticArray,   // char[N] / unsigned char[N]
  kDataLoc,       // __data_loc ...: offset relative to the record start
  kRelLoc,        // __rel_loc ...: offset relative to the end of the loc word
  kStruct,        // struct <name> <size>
};

struct Field {
  std::string type;  // exactly as registered: "unsigned int", "char[0x14]", "struct foo"
  std::string name;
  FieldKind kind = FieldKind::kInteger;
  uint32_t offset = 0;  // in the record, common header included (first field at 8)
  uint32_t size = 0;
  bool is_signed = false;  // the format file's "signed:" (type does not start with 'u')
  bool is_string = false;  // char arrays, and loc types whose type contains "char"
};

struct EventDescription {
  std::string name;  // the registered name
  std::vector<Field> fields;
  uint32_t min_size = 0;  // payload bytes the static fields need (sum of sizes)
};

// §4: parses "name[ field[;field...]]". Returns 0 or EINVAL.
int ParseCommand(std::string_view command, EventDescription* out);

// §7: whether the argument text of a command (everything after the first
// space; empty for none) describes exactly `fields`.
bool FieldsMatch(const std::vector<Field>& fields, std::string_view args);

// §4.4: "<type> <name>", plus " <size>" for struct types.
std::string CanonicalField(const Field& field);

// §11.3: "u:<name>[ <field>{; <field>}]" (no newline).
std::string DynamicEventsLine(const EventDescription& event);

// §13.3: the print fmt value, e.g. "\"count=%u\", REC->count".
std::string PrintFmt(const std::vector<Field>& fields);

// §13.2: the whole `format` file for tracepoint `tp_name` with type `id`;
// `print_fmt` replaces PrintFmt(fields) when given (synthetic events).
std::string FormatFile(std::string_view tp_name, uint32_t id, const std::vector<Field>& fields,
                       std::string_view print_fmt = {});

// §13.4: the text after "<tp_name>: " in a trace line, e.g.
// "count=0x5 (5) msg=hello", or "No fields found" (then without the space,
// see RenderTraceBody). `record` is the whole record: common header + payload.
std::string RenderFields(const std::vector<Field>& fields, std::span<const uint8_t> record);

// "<tp_name>: <fields>" or "<tp_name>:No fields found" as in a trace line.
std::string RenderTraceBody(std::string_view tp_name, const std::vector<Field>& fields,
                            std::span<const uint8_t> record);

// A line written to dynamic_events (§11), already split from its neighbours.
struct DynamicEventsCommand {
  enum class Op { kNone, kCreate, kDelete, kForeign } op = Op::kNone;
  std::string command;  // kCreate: the registration command after "u:" and spaces
  std::string system;   // kDelete: the system given before '/', or empty
  std::string name;     // kDelete: the event name
  std::string args;     // kDelete: the field text after the name, or empty
};

// Parses one line of dynamic_events input. Blank lines and '#' comments give
// kNone; lines that are not user events ("p:", "r:", ...) give kForeign.
// Returns 0 or EINVAL (malformed delete: "-x", no ':', empty name).
int ParseDynamicEventsLine(std::string_view line, DynamicEventsCommand* out);

}  // namespace udiag::schema
