// Field numbers of the Perfetto messages udiag writes, from the vendored
// upstream protos (protos/perfetto/trace/), and the one packet sequence it
// writes them on.
#pragma once

#include <cstdint>

namespace udiag::record::perfetto {

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

// The packet sequences udiag writes: the trace's own packets (its clock
// snapshot, track descriptors and the losses at its end) on one, and each
// cpu's events on one of their own, in time order within it, as each of a
// Perfetto producer's writers keeps its own sequence; trace_processor puts
// the packets of all sequences in time order.
constexpr uint64_t kTraceSequenceId = 1;
constexpr uint64_t EventSequenceId(uint16_t cpu) { return 2 + uint64_t{cpu}; }

}  // namespace udiag::record::perfetto
