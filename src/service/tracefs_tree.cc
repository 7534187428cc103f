#include "service/tracefs_tree.h"

#include <fmt/format.h>
#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <map>

#include "base/tsc.h"
#include "schema/timestamp_text.h"
#include "service/trace_text.h"
#include "trigger/synth_event.h"

namespace udiag::service {

enum class Node {
  kRoot, kInstancesDir, kOptionsDir, kPerCpuDir, kCpuDir, kEventsDir, kSystemDir, kEventDir,  // directories
  kDynamicEvents, kStatus, kAvailableEvents, kSetEvent, kTrace, kTracePipe, kTracingOn,
  kBufferSizeKb, kTraceClock, kEventsMax, kEnable, kFormat, kId, kOverwrite, kSnapshot, kStats,
  kBlockingTimeoutMs, kReadme, kDataFile, kUsdtProbe, kFilter, kErrorLog, kTrigger, kHist, kSyntheticEvents,
};

struct TracefsTree::Resolved {
  Node node;
  Instance* instance = nullptr;
  std::string system;     // kSystemDir and below; empty for events/enable
  Event* event = nullptr; // kEventDir and its files
};

namespace {

constexpr const char* kSystems[] = {"user_events", "user_events_multi", "synthetic"};

// Programs test that README exists to decide whether tracefs is mounted.
constexpr const char* kReadmeText =
    "udiag's view of tracefs: the kernel's user_events files, served by udiagd.\n"
    "  user_events_data     register (DIAG_IOCSREG) and write events (with the udiag preload)\n"
    "  user_events_status   registered events and what traces them\n"
    "  dynamic_events       u:<name> <fields> creates, -:<name> deletes\n"
    "  events/<system>/<event>/{enable,filter,format,hist,id,trigger}  events/<system>/{enable,filter}\n"
    "  trace  trace_pipe  tracing_on  buffer_size_kb  set_event  error_log  synthetic_events  instances/\n"
    "See docs/cli.md and docs/compat.md of udiag.\n";

// An hour: a longer stall is a hang, not a wait.
constexpr uint64_t kMaxBlockingTimeoutMs = 3'600'000;

struct FileSpec {
  const char* name;
  Node node;
  bool top_only = false;  // global files, absent from instances/<name>/
};
constexpr FileSpec kRootFiles[] = {
    {"README", Node::kReadme, true},                    {"user_events_data", Node::kDataFile, true},
    {"available_events", Node::kAvailableEvents, true}, {"blocking_timeout_ms", Node::kBlockingTimeoutMs},
    {"buffer_size_kb", Node::kBufferSizeKb},            {"error_log", Node::kErrorLog},
    {"dynamic_events", Node::kDynamicEvents, true},     {"set_event", Node::kSetEvent},
    {"snapshot", Node::kSnapshot},                      {"trace", Node::kTrace},
    {"trace_clock", Node::kTraceClock},                 {"trace_pipe", Node::kTracePipe},
    {"tracing_on", Node::kTracingOn},                   {"usdt_probe", Node::kUsdtProbe},
    {"user_events_max", Node::kEventsMax, true},        {"user_events_status", Node::kStatus, true},
    {"synthetic_events", Node::kSyntheticEvents, true},
};
constexpr FileSpec kEventFiles[] = {
    {"enable", Node::kEnable}, {"filter", Node::kFilter}, {"format", Node::kFormat},
    {"hist", Node::kHist},     {"id", Node::kId}, {"trigger", Node::kTrigger}};

bool IsDirectory(Node n) { return n <= Node::kEventDir; }

// Files a producer may read besides a consumer: what a producer needs to
// describe its own events (perf_test reads `id` and `format`).
bool ProducerReadable(Node n) {
  return n == Node::kFormat || n == Node::kId || n == Node::kAvailableEvents || n == Node::kReadme ||
         n == Node::kDataFile || IsDirectory(n);
}

std::vector<std::string_view> SplitPath(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (!part.empty() && part != ".") parts.push_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

// A decimal number as the kernel's kstrtoul_from_user reads one: at most
// 127 bytes are looked at, a NUL ends the text (`write(fd, "1", sizeof("1"))`),
// then an optional '+', digits, and one optional newline.
bool ParseUnsigned(std::string_view text, uint64_t* out) {
  text = text.substr(0, 127);
  text = text.substr(0, text.find('\0'));
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  if (text.empty() || text.front() < '0' || text.front() > '9') return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool SystemHasEvents(const EventRegistry& registry, std::string_view system) {
  for (const Event* e : registry.Events()) {
    if (system == e->system()) return true;
  }
  return false;
}

}  // namespace

TracefsTree::TracefsTree(EventRegistry* registry, InstanceSet* instances, CommLookup comm)
    : registry_(registry), instances_(instances), comm_(std::move(comm)) {
  instances_->set_comm_lookup(comm_);  // COMM in filters: the names of the TASK column
}

base::ErrorOr<TracefsTree::Resolved> TracefsTree::Resolve(std::string_view path) const {
  std::vector<std::string_view> parts = SplitPath(path);
  Resolved r{Node::kRoot, &instances_->top(), {}, nullptr};
  for (auto part : parts) {
    if (part == "..") return base::Errno{ENOENT};
  }
  bool top = true;
  if (!parts.empty() && parts[0] == "instances") {
    if (parts.size() == 1) return Resolved{Node::kInstancesDir, r.instance, {}, nullptr};
    r.instance = instances_->Find(parts[1]);
    if (!r.instance) return base::Errno{ENOENT};
    parts.erase(parts.begin(), parts.begin() + 2);
    top = false;
  }
  if (parts.empty()) return r;
  if (parts[0] == "options") {
    if (parts.size() == 1) return Resolved{Node::kOptionsDir, r.instance, {}, nullptr};
    if (parts.size() == 2 && parts[1] == "overwrite") return Resolved{Node::kOverwrite, r.instance, {}, nullptr};
    return base::Errno{ENOENT};
  }
  // One buffer per instance, so one cpu directory: cpu0.
  if (parts[0] == "per_cpu") {
    if (parts.size() == 1) return Resolved{Node::kPerCpuDir, r.instance, {}, nullptr};
    if (parts[1] != "cpu0") return base::Errno{ENOENT};
    if (parts.size() == 2) return Resolved{Node::kCpuDir, r.instance, {}, nullptr};
    if (parts.size() == 3 && parts[2] == "stats") return Resolved{Node::kStats, r.instance, {}, nullptr};
    return base::Errno{ENOENT};
  }
  if (parts[0] != "events") {
    if (parts.size() != 1) return base::Errno{ENOENT};
    for (const auto& f : kRootFiles) {
      if (parts[0] == f.name && (top || !f.top_only)) return Resolved{f.node, r.instance, {}, nullptr};
    }
    return base::Errno{ENOENT};
  }
  // events/...
  if (parts.size() == 1) return Resolved{Node::kEventsDir, r.instance, {}, nullptr};
  if (parts.size() == 2 && parts[1] == "enable") return Resolved{Node::kEnable, r.instance, {}, nullptr};
  r.system = std::string(parts[1]);
  if (std::find(std::begin(kSystems), std::end(kSystems), r.system) == std::end(kSystems)) return base::Errno{ENOENT};
  if (!SystemHasEvents(*registry_, r.system)) return base::Errno{ENOENT};
  if (parts.size() == 2) return Resolved{Node::kSystemDir, r.instance, r.system, nullptr};
  if (parts.size() == 3 && parts[2] == "enable") return Resolved{Node::kEnable, r.instance, r.system, nullptr};
  if (parts.size() == 3 && parts[2] == "filter") return Resolved{Node::kFilter, r.instance, r.system, nullptr};
  r.event = registry_->FindByTracepoint(r.system, parts[2]);
  if (!r.event) return base::Errno{ENOENT};
  if (parts.size() == 3) return Resolved{Node::kEventDir, r.instance, r.system, r.event};
  if (parts.size() != 4) return base::Errno{ENOENT};
  for (const auto& f : kEventFiles) {
    if (parts[3] == f.name) return Resolved{f.node, r.instance, r.system, r.event};
  }
  return base::Errno{ENOENT};
}

base::ErrorOr<std::string> TracefsTree::Read(std::string_view path, const Caller& caller) const {
  auto r = Resolve(path);
  if (!r.ok()) return base::Errno{r.error()};
  if (!caller.consumer && !(caller.producer && ProducerReadable(r->node))) return base::Errno{EACCES};
  const Instance& inst = *r->instance;
  switch (r->node) {
    case Node::kRoot: case Node::kInstancesDir: case Node::kOptionsDir: case Node::kPerCpuDir:
    case Node::kCpuDir: case Node::kEventsDir: case Node::kSystemDir: case Node::kEventDir:
      return base::Errno{EISDIR};
    case Node::kTracePipe:
      return base::Errno{EINVAL};  // streamed: see PipeInstance()
    case Node::kDataFile:
      return base::Errno{EINVAL};  // as the kernel's: no read; the preload serves its writes
    case Node::kReadme:
      return std::string(kReadmeText);
    case Node::kDynamicEvents: {
      std::string out;
      for (const Event* e : registry_->Events()) {
        out += e->synthetic ? "s:synthetic/" + trigger::SynthEventLine(e->desc)
                            : schema::DynamicEventsLine(e->desc) + "\n";
      }
      return out;
    }
    case Node::kSyntheticEvents: {
      std::string out;
      for (const Event* e : registry_->Events()) {
        if (e->synthetic) out += trigger::SynthEventLine(e->desc);
      }
      return out;
    }
    case Node::kStatus:
      return ReadStatus();
    case Node::kAvailableEvents: {
      std::string out;
      for (const Event* e : registry_->Events()) out += fmt::format("{}:{}\n", e->system(), e->tp_name);
      return out;
    }
    case Node::kSetEvent: {
      std::string out;
      for (const Event* e : registry_->Events()) {
        if (inst.IsEnabled(e->id)) out += fmt::format("{}:{}\n", e->system(), e->tp_name);
      }
      return out;
    }
    case Node::kTrace:
      return ReadTrace(inst.buffer());
    case Node::kTracingOn:
      return std::string(inst.tracing_on() ? "1\n" : "0\n");
    case Node::kBufferSizeKb:
      return fmt::format("{}\n", inst.buffer().capacity() / 1024);
    case Node::kBlockingTimeoutMs:
      return fmt::format("{}\n", inst.blocking_timeout_ms());
    case Node::kUsdtProbe:
      return std::string(inst.usdt_probe() ? "1\n" : "0\n");
    case Node::kTraceClock:
      return std::string("[mono]\n");
    case Node::kEventsMax:
      return fmt::format("{}\n", registry_->max_events());
    case Node::kEnable:
      if (r->event) return ReadEventEnable(inst, r->event->id);
      return ReadEnable(inst, r->system);
    case Node::kFormat:
      return schema::FormatFile(r->event->tp_name, r->event->id, r->event->desc.fields,
                                r->event->synthetic ? trigger::SynthPrintFmt(r->event->desc.fields) : "");
    case Node::kId:
      return fmt::format("{}\n", r->event->id);
    case Node::kOverwrite:
      return std::string(inst.buffer().overwrite() ? "1\n" : "0\n");
    case Node::kSnapshot:
      return ReadSnapshot(inst);
    case Node::kStats:
      return ReadStats(inst.buffer());
    case Node::kFilter:
      return r->event ? inst.filters().Read(*r->event) : SystemFilterText();
    case Node::kErrorLog:
      return inst.error_log().Text();
    case Node::kTrigger:
      return inst.triggers().Read(*r->event);
    case Node::kHist:
      return inst.triggers().ReadHist(*r->event);
  }
  return base::Errno{EINVAL};
}

// ftrace's per_cpu/cpuN/stats, and two lines of ours: what producers' rings
// lost before the buffer (the kernel's writers have no ring of their own),
// and how much of that while the daemon left them alone for the disk.
std::string TracefsTree::ReadStats(const TraceBuffer& buffer) const {
  auto seconds = [](uint64_t ns) {
    schema::SecondsMicros t = schema::RoundToMicros(ns);
    return fmt::format("{:5}.{:06}", t.seconds, t.micros);
  };
  const TraceBuffer::Stats& stats = buffer.stats();
  return fmt::format(
      "entries: {}\noverrun: {}\ncommit overrun: 0\nbytes: {}\noldest event ts: {}\nnow ts: {}\n"
      "dropped events: {}\nread events: {}\nlost in producer rings: {}\n"
      "lost in producer rings while the disk was behind: {}\n",
      buffer.entries(), stats.overrun, buffer.bytes(), seconds(buffer.oldest_timestamp()),
      seconds(base::MonotonicNs()), stats.dropped, stats.read, stats.lost_upstream,
      stats.lost_upstream_disk_behind);
}

std::string TracefsTree::ReadStatus() const {
  std::string out;
  size_t busy = 0;
  std::vector<Event*> events = registry_->UserEvents();
  for (const Event* e : events) {
    out += e->tp_name;
    if (e->status) {
      ++busy;
      out += " # Used by";
      if (e->status & kStatusFtrace) out += " ftrace";
      if (e->status & kStatusPerf) out += " perf";
      if (e->status & kStatusOther) out += " other";
      if (instances_->RecordedBy(e->id)) out += " record";  // ours, after the kernel's kinds
    }
    out += '\n';
  }
  out += fmt::format("\nActive: {}\nBusy: {}\n", events.size(), busy);
  return out;
}

std::string TracefsTree::ReadEnable(const Instance& instance, std::string_view system) const {
  bool any_on = false, any_off = false;
  for (const Event* e : registry_->Events()) {
    if (!system.empty() && system != e->system()) continue;
    (instance.IsEnabled(e->id) ? any_on : any_off) = true;
  }
  if (any_on && any_off) return "X\n";
  return any_on ? "1\n" : "0\n";
}

// The kernel's enable file: "1" or "0", and a '*' while triggers hold the
// event in soft mode (then "0*" fires for the triggers but keeps nothing).
std::string TracefsTree::ReadEventEnable(const Instance& instance, uint32_t id) const {
  std::string out = instance.IsEnabled(id) ? "1" : "0";
  if (instance.InSoftMode(id)) out += '*';
  return out + "\n";
}

std::string TracefsTree::ReadSnapshot(const Instance& instance) const {
  if (instance.snapshot()) return ReadTrace(*instance.snapshot());
  return "# tracer: nop\n#\n#\n# * Snapshot is freed *\n#\n"
         "# Snapshot commands:\n"
         "# echo 0 > snapshot : Clears and frees snapshot buffer\n"
         "# echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n"
         "#                      Takes a snapshot of the main buffer.\n"
         "# echo 2 > snapshot : Clears snapshot buffer (but does not allocate or free)\n";
}

std::string TracefsTree::ReadTrace(const TraceBuffer& buf) const {
  std::string out = TraceFileHeader(buf.entries(), buf.written(), sysconf(_SC_NPROCESSORS_ONLN));
  buf.ForEach([&](const TraceEntry& e) { out += RenderEntry(e); });
  if (buf.pending_lost()) out += LostEventsLine(0, buf.pending_lost());
  return out;
}

std::string TracefsTree::RenderEntry(const TraceEntry& entry) const {
  std::string out;
  if (entry.lost_before) out += LostEventsLine(entry.meta.cpu, entry.lost_before);
  uint16_t type = 0;
  if (entry.record.size() >= sizeof(type)) std::memcpy(&type, entry.record.data(), sizeof(type));
  out += TraceLine(entry, comm_(entry.meta.tid), registry_->FindById(type));
  return out;
}

int TracefsTree::Write(std::string_view path, std::string_view text, bool append, const Caller& caller) {
  auto r = Resolve(path);
  if (!r.ok()) return r.error();
  if (IsDirectory(r->node)) return EISDIR;
  if (!caller.consumer) return EACCES;
  Instance& inst = *r->instance;
  uint64_t value = 0;
  switch (r->node) {
    case Node::kDynamicEvents:
      return WriteDynamicEvents(text, append, caller);
    case Node::kSyntheticEvents:
      return WriteSyntheticEvents(text, append, caller);
    case Node::kSetEvent:
      return WriteSetEvent(inst, text, append);
    case Node::kTrace:
      if (!append) inst.buffer().Clear();  // opening with O_TRUNC clears, as ftrace
      return 0;
    case Node::kTracingOn:
      if (!ParseUnsigned(text, &value)) return EINVAL;
      inst.set_tracing_on(value != 0);
      return 0;
    case Node::kBufferSizeKb:
      if (!ParseUnsigned(text, &value) || value == 0 || value > (1u << 22)) return EINVAL;
      inst.buffer().set_capacity(value * 1024);
      return 0;
    case Node::kBlockingTimeoutMs:
      if (!ParseUnsigned(text, &value) || value > kMaxBlockingTimeoutMs) return EINVAL;
      inst.set_blocking_timeout_ms(static_cast<uint32_t>(value));
      return 0;
    case Node::kTraceClock: {
      std::string_view clock = text.substr(0, text.find_last_not_of(" \n") + 1);
      return clock == "mono" ? 0 : EINVAL;
    }
    case Node::kEventsMax:
      if (!caller.privileged) return EACCES;
      if (!ParseUnsigned(text, &value) || value > UINT32_MAX) return EINVAL;
      registry_->set_max_events(value);
      return 0;
    case Node::kEnable:
      if (r->event) {
        if (!ParseUnsigned(text, &value) || value > 1) return EINVAL;
        instances_->SetEnabled(inst, r->event, value == 1);
        return 0;
      }
      return WriteEnable(inst, r->system, text);
    case Node::kOverwrite:
      if (!ParseUnsigned(text, &value) || value > 1) return EINVAL;
      inst.buffer().set_overwrite(value == 1);
      return 0;
    case Node::kFilter:
      if (r->event) return inst.filters().Write(*r->event, text, &inst.error_log());
      return inst.filters().WriteSystem(SystemEvents(r->system), text, &inst.error_log());
    case Node::kTrigger:
      return inst.triggers().Write(*instances_, inst, *r->event, text, append, *registry_);
    case Node::kErrorLog:
      if (!append) inst.error_log().Clear();  // opening with O_TRUNC clears, as ftrace
      return 0;
    case Node::kUsdtProbe:
      if (!ParseUnsigned(text, &value) || value > 1) return EINVAL;
      inst.set_usdt_probe(value == 1);
      return 0;
    case Node::kSnapshot:
      if (!ParseUnsigned(text, &value)) return EINVAL;
      if (value == 0) {
        inst.FreeSnapshot();
      } else if (value == 1) {
        inst.TakeSnapshot();
      } else {
        inst.ClearSnapshot();
      }
      return 0;
    default:
      return EACCES;  // read-only file
  }
}

std::vector<Event*> TracefsTree::SystemEvents(std::string_view system) const {
  std::vector<Event*> events = registry_->Events();
  std::erase_if(events, [&](const Event* e) { return system != e->system(); });
  return events;
}

int TracefsTree::WriteEnable(Instance& instance, std::string_view system, std::string_view text) {
  uint64_t value;
  if (!ParseUnsigned(text, &value) || value > 1) return EINVAL;
  for (Event* e : registry_->Events()) {
    if (system.empty() || system == e->system()) instances_->SetEnabled(instance, e, value == 1);
  }
  return 0;
}

int TracefsTree::WriteDynamicEvents(std::string_view text, bool append, const Caller& caller) {
  if (!append) {
    if (int err = registry_->DeleteAll(caller.privileged)) return err;
  }
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);

    schema::DynamicEventsCommand cmd;
    if (int err = schema::ParseDynamicEventsLine(line, &cmd)) return err;
    switch (cmd.op) {
      case schema::DynamicEventsCommand::Op::kNone:
        break;
      case schema::DynamicEventsCommand::Op::kForeign:
        return EINVAL;  // no kprobe/uprobe/synthetic providers here
      case schema::DynamicEventsCommand::Op::kCreate: {
        if (!caller.privileged) return EPERM;
        if (cmd.command.size() >= 4096) return EINVAL;
        auto e = registry_->FindOrCreate(cmd.command, /*multi_format=*/false, /*persist=*/true);
        if (!e.ok()) return e.error();
        registry_->Put(*e);  // keep only the self reference
        break;
      }
      case schema::DynamicEventsCommand::Op::kDelete:
        if (int err = registry_->DeleteMatching(cmd.system, cmd.name, cmd.args, caller.privileged)) {
          return err;
        }
        break;
    }
  }
  return 0;
}

// As the kernel's: one definition per line, "!name ..." removes one, and a
// truncating write removes them all first (none while any is in use).
int TracefsTree::WriteSyntheticEvents(std::string_view text, bool append, const Caller& caller) {
  if (!caller.privileged) return EPERM;
  if (!append) {
    std::vector<Event*> synthetic = registry_->Events();
    std::erase_if(synthetic, [](const Event* e) { return !e->synthetic; });
    for (const Event* e : synthetic) {
      if (e->refs > 1) return EBUSY;
    }
    for (const Event* e : synthetic) registry_->DeleteSynthetic(e->reg_name());
  }
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    line.remove_prefix(line.find_first_not_of(" \t"));
    if (line.starts_with('!')) {
      line.remove_prefix(1);
      if (int err = registry_->DeleteSynthetic(line.substr(0, line.find_first_of(" \t")))) return err;
      continue;
    }
    schema::EventDescription desc;
    if (int err = trigger::ParseSynthEvent(line, &desc)) return err;
    auto e = registry_->CreateSynthetic(std::move(desc));
    if (!e.ok()) return e.error();
  }
  return 0;
}

int TracefsTree::WriteSetEvent(Instance& instance, std::string_view text, bool append) {
  if (!append) {
    for (Event* e : registry_->Events()) instances_->SetEnabled(instance, e, false);
  }
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = text.find_first_not_of(" \t\n", pos);
    if (start == std::string_view::npos) break;
    size_t end = text.find_first_of(" \t\n", start);
    std::string token(text.substr(start, end == std::string_view::npos ? end : end - start));
    pos = end == std::string_view::npos ? text.size() : end;

    bool on = token[0] != '!';
    if (!on) token.erase(0, 1);
    // "system:event", "event" (any system) or globs of either part.
    std::string system_glob = "*", event_glob = token;
    if (size_t colon = token.find(':'); colon != std::string::npos) {
      system_glob = token.substr(0, colon);
      event_glob = token.substr(colon + 1);
    }
    bool matched = false;
    for (Event* e : registry_->Events()) {
      if (fnmatch(system_glob.c_str(), e->system(), 0) != 0) continue;
      if (fnmatch(event_glob.c_str(), e->tp_name.c_str(), 0) != 0) continue;
      instances_->SetEnabled(instance, e, on);
      matched = true;
    }
    if (!matched) return EINVAL;
  }
  return 0;
}

base::ErrorOr<std::vector<DirEntry>> TracefsTree::List(std::string_view path, const Caller& caller) const {
  auto r = Resolve(path);
  if (!r.ok()) return base::Errno{r.error()};
  if (!caller.consumer && !caller.producer) return base::Errno{EACCES};
  std::vector<DirEntry> out;
  switch (r->node) {
    case Node::kRoot: {
      bool top = r->instance == &instances_->top();
      out.push_back({"events", true});
      if (top) out.push_back({"instances", true});
      out.push_back({"options", true});
      out.push_back({"per_cpu", true});
      for (const auto& f : kRootFiles) {
        if (top || !f.top_only) out.push_back({f.name, false});
      }
      break;
    }
    case Node::kInstancesDir:
      for (const auto& [name, _] : instances_->named()) out.push_back({name, true});
      break;
    case Node::kOptionsDir:
      out.push_back({"overwrite", false});
      break;
    case Node::kPerCpuDir:
      out.push_back({"cpu0", true});
      break;
    case Node::kCpuDir:
      out.push_back({"stats", false});
      break;
    case Node::kEventsDir:
      out.push_back({"enable", false});
      for (const char* sys : kSystems) {
        if (SystemHasEvents(*registry_, sys)) out.push_back({sys, true});
      }
      break;
    case Node::kSystemDir:
      out.push_back({"enable", false});
      out.push_back({"filter", false});
      for (const Event* e : registry_->Events()) {
        if (r->system == e->system()) out.push_back({e->tp_name, true});
      }
      break;
    case Node::kEventDir:
      for (const auto& f : kEventFiles) out.push_back({f.name, false});
      break;
    default:
      return base::Errno{ENOTDIR};
  }
  return out;
}

// Only instances/<name> can be made or removed, as in tracefs.
base::ErrorOr<std::string> TracefsTree::InstanceDirName(std::string_view path, const Caller& caller) {
  if (!caller.consumer) return base::Errno{EACCES};
  std::vector<std::string_view> parts = SplitPath(path);
  if (parts.size() != 2 || parts[0] != "instances") return base::Errno{EPERM};
  return std::string(parts[1]);
}

int TracefsTree::Mkdir(std::string_view path, uint64_t owner, const Caller& caller) {
  auto name = InstanceDirName(path, caller);
  if (!name.ok()) return name.error();
  return instances_->Create(*name, owner);
}

base::ErrorOr<std::string> TracefsTree::Rmdir(std::string_view path, const Caller& caller) {
  auto name = InstanceDirName(path, caller);
  if (!name.ok()) return name;
  if (int err = instances_->Remove(*name)) return base::Errno{err};
  return name;
}

base::ErrorOr<Instance*> TracefsTree::PipeInstance(std::string_view path, const Caller& caller) {
  auto r = Resolve(path);
  if (!r.ok()) return base::Errno{r.error()};
  if (r->node != Node::kTracePipe) return base::Errno{EINVAL};
  if (!caller.consumer) return base::Errno{EACCES};
  return r->instance;
}

}  // namespace udiag::service
