// `udiag report` and `udiag convert`: reading back a trace file we wrote.
#include <fmt/format.h>

#include <cerrno>
#include <unordered_map>

#include "cli/cli_support.h"
#include "cli/record_command.h"
#include "schema/field_values.h"
#include "schema/timestamp_text.h"

namespace udiag::cli {
namespace {

// What a report line needs of each event type and task, by id.
struct ReportIndex {
  std::unordered_map<uint32_t, const record::EventType*> types;
  std::unordered_map<uint32_t, std::string> comms;  // by tid

  explicit ReportIndex(const record::TraceReader& reader) {
    for (const auto& type : reader.event_types()) types[type.id] = &type;
    for (const auto& task : reader.tasks()) comms[task.tid] = task.comm;
  }
  std::string_view Comm(uint32_t tid) const {
    auto it = comms.find(tid);
    return it == comms.end() || it->second.empty() ? std::string_view("<...>") : std::string_view(it->second);
  }
};

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : schema::SanitizeUtf8(text)) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// "            comm-tid   [cpu] secs.usecs: name: fields", as trace-cmd report.
std::string TextLine(const ReportIndex& index, const record::Record& r) {
  schema::SecondsMicros t = schema::RoundToMicros(r.timestamp);
  std::string head = fmt::format("{:>16}-{:<7} [{:03}] {}.{:06}: ", index.Comm(r.tid), r.tid, r.cpu,
                                 t.seconds, t.micros);
  auto it = index.types.find(r.event_id);
  if (it == index.types.end()) return head + fmt::format("[UNKNOWN TYPE {}]\n", r.event_id);
  const record::EventType& type = *it->second;
  return head + schema::RenderTraceBody(type.name, type.fields, r.data) + "\n";
}

std::string JsonLine(const ReportIndex& index, const record::Record& r) {
  auto it = index.types.find(r.event_id);
  std::string system = it == index.types.end() ? "" : it->second->system;
  schema::DecodedEvent decoded;
  if (it != index.types.end()) decoded = schema::DecodeFields(it->second->name, it->second->fields, r.data);
  std::string line = fmt::format(
      "{{\"timestamp\":{},\"cpu\":{},\"pid\":{},\"tid\":{},\"comm\":{},\"system\":{},\"event\":{},\"fields\":{}",
      r.timestamp, r.cpu, r.pid, r.tid, JsonString(index.Comm(r.tid)), JsonString(system),
      it == index.types.end() ? std::string("null") : JsonString(decoded.name),
      schema::RenderFieldsJson(decoded.values));
  if (!decoded.meta.empty()) line += ",\"meta\":" + schema::RenderFieldsJson(decoded.meta);
  if (r.lost_before) line += fmt::format(",\"lost_before\":{}", r.lost_before);
  return line + "}\n";
}

// Says why `path` cannot be read, in words for the two cases users meet.
int FailToOpen(const std::string& path, int err) {
  if (err == ENOTSUP) {
    fmt::print(stderr,
               "udiag: {}: a Perfetto trace cannot be read back (its fields are annotations, not records); "
               "record to trace.dat or CTF to use report or convert\n",
               path);
    return kExitFailure;
  }
  if (err == EINVAL) {
    fmt::print(stderr, "udiag: {}: not a trace.dat file or CTF directory written by udiag\n", path);
    return kExitFailure;
  }
  return Fail(path, err);
}

}  // namespace

int Report(const std::string& path, bool json) {
  auto reader = record::OpenTraceReader(path);
  if (!reader.ok()) return FailToOpen(path, reader.error());
  ReportIndex index(**reader);
  const record::TraceInfo& info = (*reader)->info();
  if (!json && !WriteToStdout(fmt::format("cpus={}\n", info.cpus))) return 0;
  record::Record r;
  while ((*reader)->Next(&r)) {
    std::string text;
    if (json) {
      text = JsonLine(index, r);
    } else {
      if (r.lost_before) text = fmt::format("CPU:{} [LOST {} EVENTS]\n", r.cpu, r.lost_before);
      text += TextLine(index, r);
    }
    if (!WriteToStdout(text)) return 0;
  }
  if (info.lost_at_end) {
    WriteToStdout(json ? fmt::format("{{\"lost_at_end\":{}}}\n", info.lost_at_end)
                       : fmt::format("[LOST {} EVENTS at the end]\n", info.lost_at_end));
  }
  return 0;
}

int Convert(const std::string& in, const std::string& out, std::optional<record::TraceFormat> format) {
  auto reader = record::OpenTraceReader(in);
  if (!reader.ok()) return FailToOpen(in, reader.error());
  auto writer = record::OpenTraceWriter(format.value_or(record::FormatForOutput(out)), out);
  if (!writer.ok()) return Fail(out, writer.error());
  for (const auto& type : (*reader)->event_types()) (*writer)->AddEventType(type);
  for (const auto& task : (*reader)->tasks()) (*writer)->AddTask(task);
  record::Record r;
  while ((*reader)->Next(&r)) (*writer)->Write(r);
  if (int err = (*writer)->Finish((*reader)->info())) return Fail(out, err);
  return 0;
}

}  // namespace udiag::cli
