#include "record/perfetto/perfetto_writer.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/scoped_fd.h"
#include "record/byte_stream_file.h"
#include "record/perfetto/event_packet.h"
#include "record/perfetto/perfetto_fields.h"
#include "record/perfetto/proto_encoder.h"
#include "schema/field_values.h"

namespace udiag::record {
namespace {

using perfetto::Annotate;
using perfetto::ProtoMessage;
using perfetto::TimedPacket;
using perfetto::Unsigned;
namespace clock = perfetto::clock;
namespace event = perfetto::event;
namespace packet = perfetto::packet;
namespace track = perfetto::track;

uint64_t ReadClock(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

class PerfettoWriter final : public TraceWriter {
 public:
  PerfettoWriter(base::ScopedFd fd, const ClockSample& clocks) : file_(std::move(fd)) {
    ProtoMessage snapshot;
    for (auto [id, ns] : {std::pair{clock::kMonotonic, clocks.monotonic_ns},
                          std::pair{clock::kBoottime, clocks.boottime_ns}}) {
      ProtoMessage entry;
      entry.Varint(clock::kClockId, id);
      entry.Varint(clock::kClockTimestamp, ns);
      snapshot.Message(clock::kClocks, entry);
    }
    snapshot.Varint(clock::kPrimaryTraceClock, clock::kMonotonic);
    ProtoMessage packet;
    packet.Message(packet::kClockSnapshot, snapshot);
    StartSequence(&packet, perfetto::kTraceSequenceId);
  }

  void AddEventType(const EventType& type) override {
    types_[type.id] = {type, perfetto::IntegerEventPlan::For(type)};
  }

  void AddTask(const Task& task) override {
    tasks_.insert_or_assign(task.tid, task);
    // A name that arrives after its track was described is sent again.
    if (thread_tracks_.count(task.tid)) EmitThreadTrack(task.pid, task.tid);
    if (task.tid == task.pid && process_tracks_.count(task.pid)) EmitProcessTrack(task.pid);
  }

  void Write(const Record& record) override {
    // Runs of one thread's records of one event are the usual case: the
    // tracks and the type of the last record are not looked up again.
    if (!last_thread_described_ || record.tid != last_tid_ || record.pid != last_pid_) {
      if (!process_tracks_.count(record.pid)) EmitProcessTrack(record.pid);
      if (!thread_tracks_.count(record.tid)) EmitThreadTrack(record.pid, record.tid);
      last_pid_ = record.pid;
      last_tid_ = record.tid;
      last_thread_described_ = true;
    }
    latest_timestamp_ = std::max(latest_timestamp_, record.timestamp);
    if (record.cpu >= cpus_started_.size() || !cpus_started_[record.cpu]) StartCpuSequence(record.cpu);
    if (last_type_ == nullptr || record.event_id != last_type_id_) {
      auto type = types_.find(record.event_id);
      last_type_ = type == types_.end() ? nullptr : &type->second;
      last_type_id_ = record.event_id;
    }
    if (last_type_ != nullptr && last_type_->plan) {
      const perfetto::IntegerEventPlan& plan = *last_type_->plan;
      if (const char* end = plan.Write(record, file_.Room(plan.max_bytes()))) {
        file_.Grew(end);
        return;
      }
    }
    ProtoMessage packet = perfetto::EventPacket(last_type_ ? &last_type_->type : nullptr, record);
    Emit(&packet, perfetto::EventSequenceId(record.cpu));
  }

  // The file is valid at every packet boundary: what is buffered goes out.
  int Checkpoint(const TraceInfo&) override { return file_.Sync(); }

  int Finish(const TraceInfo& info) override {
    if (info.lost_at_end > 0) {
      ProtoMessage track_event;
      track_event.Varint(event::kType, event::kInstant);
      track_event.Bytes(event::kCategories, "udiag");
      track_event.Bytes(event::kName, "lost events");
      Annotate(&track_event, Unsigned("lost_events", info.lost_at_end));
      ProtoMessage packet = TimedPacket(latest_timestamp_);
      packet.Message(packet::kTrackEvent, track_event);
      Emit(&packet);
    }
    return file_.Close();
  }

 private:
  // The comm of `tid`, or "" when AddTask never named it.
  std::string_view Comm(uint32_t tid) const {
    auto task = tasks_.find(tid);
    return task == tasks_.end() ? std::string_view() : task->second.comm;
  }

  void EmitProcessTrack(uint32_t pid) {
    process_tracks_.insert(pid);
    ProtoMessage process;
    process.Varint(track::kPid, pid);
    if (!Comm(pid).empty()) process.Bytes(track::kProcessName, Comm(pid));
    ProtoMessage descriptor;
    descriptor.Varint(track::kUuid, kProcessTrackBase + pid);
    descriptor.Message(track::kProcess, process);
    EmitDescriptor(descriptor);
  }

  void EmitThreadTrack(uint32_t pid, uint32_t tid) {
    thread_tracks_.insert(tid);
    ProtoMessage thread;
    thread.Varint(track::kPid, pid);
    thread.Varint(track::kTid, tid);
    if (!Comm(tid).empty()) thread.Bytes(track::kThreadName, Comm(tid));
    ProtoMessage descriptor;
    descriptor.Varint(track::kUuid, kThreadTrackBase + tid);
    descriptor.Varint(track::kParentUuid, kProcessTrackBase + pid);
    descriptor.Message(track::kThread, thread);
    EmitDescriptor(descriptor);
  }

  void EmitDescriptor(const ProtoMessage& descriptor) {
    ProtoMessage packet;
    packet.Message(packet::kTrackDescriptor, descriptor);
    Emit(&packet);
  }

  // The first packet of a sequence: nothing came before it on the sequence.
  void StartSequence(ProtoMessage* packet, uint64_t sequence_id) {
    packet->Bool(packet::kFirstPacketOnSequence, true);
    packet->Varint(packet::kSequenceFlags, packet::kIncrementalStateCleared);
    Emit(packet, sequence_id);
  }

  void StartCpuSequence(uint16_t cpu) {
    if (cpu >= cpus_started_.size()) cpus_started_.resize(cpu + 1);
    cpus_started_[cpu] = true;
    ProtoMessage packet;
    StartSequence(&packet, perfetto::EventSequenceId(cpu));
  }

  void Emit(ProtoMessage* packet, uint64_t sequence_id = perfetto::kTraceSequenceId) {
    std::string framed;
    perfetto::AppendFramed(packet, sequence_id, &framed);
    file_.Append(framed);
  }

  ByteStreamFile file_;
  struct TypeAndPlan {
    EventType type;
    std::unique_ptr<perfetto::IntegerEventPlan> plan;  // null: EventPacket
  };
  std::unordered_map<uint32_t, TypeAndPlan> types_;
  std::unordered_map<uint32_t, Task> tasks_;  // by tid
  std::unordered_set<uint32_t> process_tracks_;
  std::unordered_set<uint32_t> thread_tracks_;
  uint64_t latest_timestamp_ = 0;
  std::vector<bool> cpus_started_;  // by cpu: its sequence has begun
  // The last record's process and thread, whose tracks are described.
  bool last_thread_described_ = false;
  uint32_t last_pid_ = 0, last_tid_ = 0;
  // The last record's type and plan, or null: a map's entries stay where
  // they are, and a type announced again for its id replaces this one's.
  const TypeAndPlan* last_type_ = nullptr;
  uint32_t last_type_id_ = 0;
};

}  // namespace

ClockSample SampleClocks() {
  // MONOTONIC read on both sides of BOOTTIME; the midpoint pairs best with it.
  uint64_t before = ReadClock(CLOCK_MONOTONIC);
  uint64_t boottime = ReadClock(CLOCK_BOOTTIME);
  uint64_t after = ReadClock(CLOCK_MONOTONIC);
  return {before + (after - before) / 2, boottime};
}

base::ErrorOr<std::unique_ptr<TraceWriter>> OpenPerfettoWriter(const std::string& path) {
  return OpenPerfettoWriter(path, SampleClocks());
}

base::ErrorOr<std::unique_ptr<TraceWriter>> OpenPerfettoWriter(const std::string& path,
                                                               const ClockSample& clocks) {
  base::ScopedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return base::Errno{errno};
  return std::unique_ptr<TraceWriter>(std::make_unique<PerfettoWriter>(std::move(fd), clocks));
}

}  // namespace udiag::record
