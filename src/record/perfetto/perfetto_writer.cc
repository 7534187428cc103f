#include "record/perfetto/perfetto_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <unordered_map>
#include <unordered_set>

#include "base/scoped_fd.h"
#include "record/perfetto/debug_annotation.h"
#include "record/perfetto/proto_encoder.h"
#include "schema/field_values.h"

namespace udiag::record {
namespace {

using perfetto::EncodeDebugAnnotation;
using perfetto::ProtoMessage;

// Field numbers from the vendored upstream protos (protos/perfetto/trace/).
namespace trace {
constexpr uint32_t kPacket = 1;
}
namespace packet {
constexpr uint32_t kClockSnapshot = 6;
constexpr uint32_t kTimestamp = 8;
constexpr uint32_t kSequenceId = 10;  // trusted_packet_sequence_id
constexpr uint32_t kTrackEvent = 11;
constexpr uint32_t kSequenceFlags = 13;
constexpr uint32_t kPreviousPacketDropped = 42;
constexpr uint32_t kTimestampClockId = 58;
constexpr uint32_t kTrackDescriptor = 60;
constexpr uint32_t kFirstPacketOnSequence = 87;
constexpr uint64_t kIncrementalStateCleared = 1;
}  // namespace packet
namespace clock {
constexpr uint32_t kClocks = 1;
constexpr uint32_t kPrimaryTraceClock = 2;
constexpr uint32_t kClockId = 1;
constexpr uint32_t kClockTimestamp = 2;
constexpr uint64_t kMonotonic = 3;
constexpr uint64_t kBoottime = 6;
}  // namespace clock
namespace track {
constexpr uint32_t kUuid = 1;
constexpr uint32_t kProcess = 3;
constexpr uint32_t kThread = 4;
constexpr uint32_t kParentUuid = 5;
constexpr uint32_t kPid = 1;          // ProcessDescriptor and ThreadDescriptor
constexpr uint32_t kTid = 2;          // ThreadDescriptor
constexpr uint32_t kThreadName = 5;   // ThreadDescriptor
constexpr uint32_t kProcessName = 6;  // ProcessDescriptor
}  // namespace track
namespace event {
constexpr uint32_t kDebugAnnotations = 4;
constexpr uint32_t kType = 9;
constexpr uint32_t kTrackUuid = 11;
constexpr uint32_t kCategories = 22;
constexpr uint32_t kName = 23;
constexpr uint64_t kInstant = 3;
}  // namespace event

// Our single writer sequence.
constexpr uint64_t kSequenceId = 1;
// Packets are written in chunks of about this size.
constexpr size_t kFlushBytes = 256 * 1024;

uint64_t ReadClock(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

schema::TypedValue Unsigned(std::string name, uint64_t value) {
  schema::TypedValue out;
  out.name = std::move(name);
  out.kind = schema::ValueKind::kUnsigned;
  out.bits = value;
  return out;
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

  void AddEventType(const EventType& type) override { types_[type.id] = type; }

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

    ProtoMessage track_event;
    track_event.Varint(event::kType, event::kInstant);
    track_event.Varint(event::kTrackUuid, kThreadTrackBase + record.tid);
    auto type = types_.find(record.event_id);
    if (type != types_.end()) {
      schema::DecodedEvent decoded =
          schema::DecodeFields(type->second.name, type->second.fields, record.data);
      track_event.Bytes(event::kCategories, type->second.system);
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
  static void Annotate(ProtoMessage* track_event, const schema::TypedValue& value) {
    track_event->Message(event::kDebugAnnotations, EncodeDebugAnnotation(value));
  }

  static ProtoMessage TimedPacket(uint64_t timestamp) {
    ProtoMessage packet;
    packet.Varint(packet::kTimestamp, timestamp);
    packet.Varint(packet::kTimestampClockId, clock::kMonotonic);
    return packet;
  }

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

  // Appends `packet` (plus our sequence id) as one Trace.packet entry.
  void Emit(ProtoMessage* packet) {
    packet->Varint(packet::kSequenceId, kSequenceId);
    ProtoMessage framed;
    framed.Message(trace::kPacket, *packet);
    buffer_ += framed.bytes();
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
  std::unordered_map<uint32_t, EventType> types_;
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
