// The binary record stream of an instance (kRecordStream): a byte stream in a
// shared ring (ipc/stream_ring.h) the daemon hands over with SCM_RIGHTS, read
// in place by consumer::RecordStream. Host byte order, like the control protocol.
//
// The stream is a sequence of frames, each a FrameHeader followed by
// `bytes` of body and padded with zeros to a multiple of 8:
//
//   kEventType  u32 id, then three length-prefixed (u32) strings: system,
//               tracepoint name, registration command (schema::ParseCommand
//               gives the fields). Sent before the first record of that type;
//               sent again if the id comes back for a new event.
//   kTask       u32 pid, u32 tid, length-prefixed comm ("" if unknown). Sent
//               before the first record of that thread.
//   kRecords    one or more entries, back to back. Each is a RecordEntry
//               followed by `record_size` bytes (8-byte common header, then
//               the payload), padded to `size` (a multiple of 8).
//   kLost       u64: events lost after the last record sent (more may follow).
//   kPage       a PageFrame, then one ftrace ring-buffer page of kStreamPageSize
//               bytes (formats.md §1.6, 8-byte commit word): the cpu's records
//               in time order, each common header + payload with the thread
//               in common_pid, losses marked on the page as ftrace marks them.
//               Only on a stream opened in page mode, instead of kRecords:
//               a trace.dat recorder stores such pages as they are, and
//               counts them from the PageFrame without reading them.
//   kPoolPage   a PageFrame alone: the same, with the page in the ring's
//               pool (stream_ring.h), page `pool_slot`.
//
// A stream opened with the recorder's trace.dat file (RecordStreamRequest)
// has the daemon write the pages into that file's cpu regions instead:
//
//   kFilePage   a PageFrame, counting the next page the daemon queued for
//               the file in cpu `cpu`'s region; followed by the page itself
//               when its events are of several types (only_type 0), for
//               counting them by type.
//   kFileProgress  a FileProgress: the region's first `bytes` are on disk.
//   kFileError  a FileError: writing the file failed; nothing more is
//               written, and later pages count as lost.
//   kFileSynced (empty) the instance has stopped tracing and every page
//               counted so far is on disk (its kFileProgress came first).
//
// RecordEntry is also how an instance buffer stores entries, so a run of them
// goes to the socket without being rewritten.
#pragma once

#include <cstdint>

namespace udiag::ipc {

enum class FrameKind : uint32_t {
  kEventType = 1,
  kTask = 2,
  kRecords = 3,
  kLost = 4,
  kPage = 5,
  kPoolPage = 6,
  kFilePage = 7,
  kFileProgress = 8,
  kFileError = 9,
  kFileSynced = 10,
};

struct FrameHeader {
  FrameKind kind;
  uint32_t bytes;  // body size, padding excluded
};
static_assert(sizeof(FrameHeader) == 8);

struct RecordEntry {
  uint32_t size;         // this header + record + padding: the distance to the next entry
  uint32_t record_size;  // common header + payload
  uint64_t lost_before;  // events lost just before this one
  uint64_t timestamp;    // CLOCK_MONOTONIC ns
  uint32_t pid;          // process (tgid)
  uint32_t tid;          // thread
  uint16_t cpu;
  uint16_t reserved[3];
};
static_assert(sizeof(RecordEntry) == 40);

struct PageFrame {
  uint32_t cpu = 0;
  uint32_t events = 0;     // records on the page
  uint32_t only_type = 0;  // the event id of every one of them, or 0 when they are of several
  uint32_t pool_slot = 0;  // kPoolPage: where the page is; 0 in kPage
  uint32_t data_bytes = 0;  // of its events, after the page header
  uint32_t reserved = 0;
  uint64_t lost_before = 0;  // events lost just before it (marked on the page too)
};
static_assert(sizeof(PageFrame) == 32);
struct FileProgress {
  uint32_t cpu = 0;
  uint32_t reserved = 0;
  uint64_t bytes = 0;  // of the cpu's region, from its start
};
static_assert(sizeof(FileProgress) == 16);

struct FileError {
  int32_t error = 0;  // an errno
  uint32_t reserved = 0;
};
static_assert(sizeof(FileError) == 8);

// A page frame's body: the PageFrame, then the page (trace.dat's page size).
inline constexpr uint32_t kStreamPageSize = 4096;
inline constexpr uint32_t kPageFrameBytes = sizeof(PageFrame) + kStreamPageSize;

// The stream's frames never exceed this body size, so a reader can size its buffer.
inline constexpr uint32_t kMaxFrameBytes = 256 * 1024;

constexpr uint32_t PadTo8(uint32_t n) { return (n + 7) & ~uint32_t{7}; }

}  // namespace udiag::ipc
