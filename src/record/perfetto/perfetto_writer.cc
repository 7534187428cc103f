#include "record/perfetto/perfetto_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <unordered_map>
#include <unordered_set>

#include "base/scoped_fd.h"
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

// Packets are written in chunks of about this size.
constexpr size_t kFlushBytes = 256 * 1024;

uint64_t ReadClock(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

class PerfettoWriter final : public TraceWriter {
 public:
  PerfettoWriter(base::ScopedFd fd, const ClockSample& clocks) : fd_(std::move(fd)) {
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
    packet.Bool(packet::kFirstPacketOnSequence, true);
    packet.Varint(packet::kSequenceFlags, packet::kIncrementalStateCleared);
    Emit(&packet);
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
    if (!process_tracks_.count(record.pid)) EmitProcessTrack(record.pid);
    if (!thread_tracks_.count(record.tid)) EmitThreadTrack(record.pid, record.tid);
    last_timestamp_ = record.timestamp;
    auto type = types_.find(record.event_id);
    if (type != types_.end() && type->second.plan && type->second.plan->Append(record, &buffer_)) {
      if (buffer_.size() >= kFlushBytes) Flush();
      return;
    }
    ProtoMessage packet = perfetto::EventPacket(type == types_.end() ? nullptr : &type->second.type, record);
    Emit(&packet);
  }

  // The file is valid at every packet boundary: what is buffered goes out.
  int Checkpoint(const TraceInfo&) override {
    Flush();
    return error_;
  }

  int Finish(const TraceInfo& info) override {
    if (info.lost_at_end > 0) {
      ProtoMessage track_event;
      track_event.Varint(event::kType, event::kInstant);
      track_event.Bytes(event::kCategories, "udiag");
      track_event.Bytes(event::kName, "lost events");
      Annotate(&track_event, Unsigned("lost_events", info.lost_at_end));
      ProtoMessage packet = TimedPacket(last_timestamp_);
      packet.Message(packet::kTrackEvent, track_event);
      Emit(&packet);
    }
    Flush();
    if (fd_.valid() && ::close(fd_.Release()) != 0 && error_ == 0) error_ = errno;
    return error_;
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

  void Emit(ProtoMessage* packet) {
    perfetto::AppendFramed(packet, &buffer_);
    if (buffer_.size() >= kFlushBytes) Flush();
  }

  void Flush() {
    size_t done = 0;
    while (error_ == 0 && done < buffer_.size()) {
      ssize_t n = ::write(fd_.get(), buffer_.data() + done, buffer_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n < 0 ? errno : EIO;
        break;
      }
      done += static_cast<size_t>(n);
    }
    buffer_.clear();
  }

  base::ScopedFd fd_;
  std::string buffer_;
  int error_ = 0;
  struct TypeAndPlan {
    EventType type;
    std::unique_ptr<perfetto::IntegerEventPlan> plan;  // null: EventPacket
  };
  std::unordered_map<uint32_t, TypeAndPlan> types_;
  std::unordered_map<uint32_t, Task> tasks_;  // by tid
  std::unordered_set<uint32_t> process_tracks_;
  std::unordered_set<uint32_t> thread_tracks_;
  uint64_t last_timestamp_ = 0;
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
