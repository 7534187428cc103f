// The daemon's virtual tracefs: every control operation is a read or write of
// a path with the kernel's names and text formats (DESIGN.md §2). The control
// socket, the CLI and the FUSE mount are front ends over this one tree.
//
//   README  user_events_data  dynamic_events  user_events_status  available_events
//   user_events_max   (top only)
//   set_event  trace  trace_pipe  tracing_on  buffer_size_kb  trace_clock  snapshot
//   options/overwrite  per_cpu/cpu0/stats
//   error_log  events/enable  events/<system>/{enable,filter}
//   events/<system>/<event>/{enable,filter,format,id}
//   instances/<name>/...   the per-instance files above, made by mkdir
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error_or.h"
#include "service/event_registry.h"
#include "service/instance.h"

namespace udiag::service {

// What the peer behind a request may do (see access_policy.h).
struct Caller {
  bool producer = false;    // may register and write events, read formats
  bool consumer = false;    // may enable events, read traces, delete via dynamic_events
  bool privileged = false;  // root or the daemon's owner: the kernel's CAP_PERFMON
};

struct DirEntry {
  std::string name;
  bool is_directory = false;
};

class TracefsTree {
 public:
  // Names the thread behind a record, for the TASK column.
  using CommLookup = service::CommLookup;

  TracefsTree(EventRegistry* registry, InstanceSet* instances, CommLookup comm);

  base::ErrorOr<std::string> Read(std::string_view path, const Caller& caller) const;
  // `append` is ">>" (O_APPEND); otherwise the open truncates, which clears
  // `trace` and deletes every event for `dynamic_events`.
  int Write(std::string_view path, std::string_view text, bool append, const Caller& caller);
  base::ErrorOr<std::vector<DirEntry>> List(std::string_view path, const Caller& caller) const;
  // mkdir/rmdir of instances/<name>: EPERM elsewhere, EACCES for a
  // non-consumer, else as InstanceSet::Create/Remove. `owner` is the
  // connection the instance dies with (0: none). Rmdir returns the name.
  int Mkdir(std::string_view path, uint64_t owner, const Caller& caller);
  base::ErrorOr<std::string> Rmdir(std::string_view path, const Caller& caller);
  // The instance whose trace_pipe `path` names (EACCES, ENOENT otherwise).
  base::ErrorOr<Instance*> PipeInstance(std::string_view path, const Caller& caller);

  // One entry as `trace_pipe` shows it, with its lost-events line first.
  std::string RenderEntry(const TraceEntry& entry) const;

 private:
  struct Resolved;
  base::ErrorOr<Resolved> Resolve(std::string_view path) const;

  static base::ErrorOr<std::string> InstanceDirName(std::string_view path, const Caller& caller);
  std::string ReadTrace(const TraceBuffer& buffer) const;
  std::string ReadEventEnable(const Instance& instance, uint32_t id) const;
  std::string ReadSnapshot(const Instance& instance) const;
  std::string ReadStatus() const;
  std::string ReadStats(const TraceBuffer& buffer) const;
  std::string ReadEnable(const Instance& instance, std::string_view system) const;
  int WriteSyntheticEvents(std::string_view text, bool append, const Caller& caller);
  int WriteDynamicEvents(std::string_view text, bool append, const Caller& caller);
  int WriteSetEvent(Instance& instance, std::string_view text, bool append);
  int WriteEnable(Instance& instance, std::string_view system, std::string_view text);
  std::vector<Event*> SystemEvents(std::string_view system) const;

  EventRegistry* registry_;
  InstanceSet* instances_;
  CommLookup comm_;
};

}  // namespace udiag::service
