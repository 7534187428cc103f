// TSDL text generation. Integer types are spelled out inline instead of
// typealiases, so no declared type name can clash with a field name.

#include "record/ctf/tsdl_metadata.h"

#include <fmt/format.h>

#include <iterator>
#include <set>

namespace udiag::record::ctf {
namespace {

constexpr std::string_view kClockName = "monotonic";

std::string Integer(unsigned bits, bool is_signed, std::string_view extra = "") {
  return fmt::format("integer {{ size = {}; align = 8; signed = {}; {}}}", bits, is_signed, extra);
}

std::string Timestamp() { return Integer(64, false, fmt::format("map = clock.{}.value; ", kClockName)); }

std::string UuidText(const std::array<uint8_t, kUuidSize>& u) {
  return fmt::format("{:02x}-{:02x}-{:02x}-{:02x}-{:02x}", fmt::join(u.begin(), u.begin() + 4, ""),
                     fmt::join(u.begin() + 4, u.begin() + 6, ""), fmt::join(u.begin() + 6, u.begin() + 8, ""),
                     fmt::join(u.begin() + 8, u.begin() + 10, ""), fmt::join(u.begin() + 10, u.end(), ""));
}

std::string Literal(std::string_view text) { return fmt::format("\"{}\"", PrintableText(text)); }

// "comm_<tid> = <name>;" per thread (the first name seen for a reused tid),
// so readers can name the tid of an event's context.
void AppendThreadNames(const std::vector<Task>& tasks, std::string* out) {
  std::set<uint32_t> named;
  for (const Task& task : tasks) {
    if (named.insert(task.tid).second) {
      fmt::format_to(std::back_inserter(*out), "\tcomm_{} = {};\n", task.tid, Literal(task.comm));
    }
  }
}

void AppendField(const schema::Field& field, const CtfField& ctf, std::string* out) {
  auto it = std::back_inserter(*out);
  switch (ctf.kind) {
    case CtfFieldKind::kInteger:
      fmt::format_to(it, "\t\t{} {};\n", Integer(field.size * 8, field.is_signed, "base = 10; "), ctf.name);
      break;
    case CtfFieldKind::kCharArray:
      fmt::format_to(it, "\t\t{} {}[{}];\n", Integer(8, false, "encoding = UTF8; "), ctf.name, field.size);
      break;
    case CtfFieldKind::kByteArray:
      fmt::format_to(it, "\t\t{} {}[{}];\n", Integer(8, false, "base = 16; "), ctf.name, field.size);
      break;
    case CtfFieldKind::kDynString:
      fmt::format_to(it, "\t\tstring {};\n", ctf.name);
      break;
    case CtfFieldKind::kDynByteArray:
      fmt::format_to(it, "\t\t{} {};\n", Integer(16, false), ctf.length_name);
      fmt::format_to(it, "\t\t{} {}[{}];\n", Integer(8, false, "base = 16; "), ctf.name, ctf.length_name);
      break;
  }
}

void AppendEvents(const TraceModel& model, std::string* out) {
  std::vector<CtfEventLayout> layouts = LayoutEvents(model.types);
  for (size_t i = 0; i < layouts.size(); ++i) {
    const EventType& type = model.types[i];
    fmt::format_to(std::back_inserter(*out),
                   "event {{\n\tname = \"{}\";\n\tid = {};\n\tstream_id = 0;\n\tfields := struct {{\n",
                   layouts[i].name, type.id);
    for (size_t f = 0; f < type.fields.size(); ++f) AppendField(type.fields[f], layouts[i].fields[f], out);
    *out += "\t};\n};\n\n";
  }
}

}  // namespace

std::string MetadataText(const TraceModel& model, int64_t clock_offset_ns) {
  std::string text;
  auto out = std::back_inserter(text);
  fmt::format_to(out,
                 "/* CTF 1.8 */\n\n"
                 "trace {{\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"{}\";\n\tbyte_order = le;\n"
                 "\tpacket.header := struct {{\n"
                 "\t\t{} magic;\n\t\t{} uuid[16];\n\t\t{} stream_id;\n\t}};\n}};\n\n",
                 UuidText(model.uuid), Integer(32, false, "base = 16; "), Integer(8, false, "base = 16; "),
                 Integer(32, false));
  fmt::format_to(out,
                 "env {{\n\thostname = {};\n\ttracer_name = \"udiag\";\n\ttrace_clock = {};\n"
                 "\tcpus = {};\n",
                 Literal(model.info.hostname), Literal(model.info.clock), model.info.cpus);
  AppendThreadNames(model.tasks, &text);
  text += "};\n\n";
  int64_t offset_s = clock_offset_ns / 1000000000;
  int64_t offset_ns = clock_offset_ns % 1000000000;
  if (offset_ns < 0) offset_ns += 1000000000, --offset_s;
  fmt::format_to(out,
                 "clock {{\n\tname = \"{}\";\n\tdescription = \"CLOCK_MONOTONIC\";\n"
                 "\tfreq = 1000000000;\n\tprecision = 1;\n\toffset_s = {};\n\toffset = {};\n"
                 "\tabsolute = false;\n}};\n\n",
                 kClockName, offset_s, offset_ns);
  fmt::format_to(out,
                 "stream {{\n\tid = 0;\n\tpacket.context := struct {{\n"
                 "\t\t{0} timestamp_begin;\n\t\t{0} timestamp_end;\n\t\t{1} content_size;\n"
                 "\t\t{1} packet_size;\n\t\t{1} packet_seq_num;\n\t\t{1} events_discarded;\n"
                 "\t\t{2} cpu_id;\n\t}};\n"
                 "\tevent.header := struct {{\n\t\t{2} id;\n\t\t{0} timestamp;\n\t}};\n"
                 "\tevent.context := struct {{\n\t\t{3} pid;\n\t\t{3} tid;\n"
                 "\t\t{4} common_flags;\n\t\t{5} common_preempt_count;\n\t}};\n}};\n\n",
                 Timestamp(), Integer(64, false), Integer(32, false), Integer(32, true),
                 Integer(8, false, "base = 16; "), Integer(8, false));
  AppendEvents(model, &text);
  text += ModelComment(model);
  return text;
}

}  // namespace udiag::record::ctf
