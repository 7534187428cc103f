// The recording model every trace file format is written from and read back
// into: the event types seen, the tasks that emitted them, and the records in
// time order. `udiag record` fills it from the daemon's record stream;
// `udiag report` and `udiag convert` fill it from a file we wrote.
//
// A record keeps the kernel's binary layout (8-byte common header, then the
// payload as the event's format describes it), so a writer can copy it into a
// trace.dat page untouched and decode fields with schema::Field offsets.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/error_or.h"
#include "schema/event_description.h"

namespace udiag::record {

struct EventType {
  uint32_t id = 0;       // common_type of its records
  std::string system;    // "user_events", "user_events_multi", "mmiotrace", ...
  std::string name;      // tracepoint name, e.g. "test" or "test.1f" (multi-format)
  std::vector<schema::Field> fields;  // offsets include the 8-byte common header
};

// A thread that emitted records. comm is the thread name (/proc/<pid>/task/<tid>/comm).
struct Task {
  uint32_t pid = 0;  // process (tgid)
  uint32_t tid = 0;
  std::string comm;
};

struct Record {
  uint64_t timestamp = 0;    // CLOCK_MONOTONIC ns (the ftrace "mono" clock)
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint16_t cpu = 0;
  uint32_t event_id = 0;     // == common_type in data
  uint64_t lost_before = 0;  // events lost on this cpu just before this record
  std::span<const uint8_t> data;  // common header + payload; valid during the call
};

// What a file says about the whole trace.
struct TraceInfo {
  uint32_t cpus = 1;          // records have cpu < cpus
  std::string clock = "mono";
  std::string hostname;
  uint64_t lost_at_end = 0;   // losses after the last record (all cpus)
};

// Writes one file. Calls come in this order: AddEventType / AddTask whenever a
// new one appears (always before the first record that uses it), Write for
// records in non-decreasing timestamp order (within each cpu only, for CTF,
// whose streams are per cpu), then Finish once. Formats whose
// header must precede the data (trace.dat) spool internally.
class TraceWriter {
 public:
  virtual ~TraceWriter() = default;
  virtual void AddEventType(const EventType& type) = 0;
  virtual void AddTask(const Task& task) = 0;
  virtual void Write(const Record& record) = 0;
  // Whether the format stores whole ftrace pages (WritePage): a recording
  // hands other writers the records of the pages it is sent.
  virtual bool KeepsPages() const { return false; }
  // Stores an ftrace ring-buffer page of `cpu` (trace.dat's page size, its
  // records already in time order and encoded as the kernel does) as it is.
  // False, storing nothing, when the format keeps no such pages; a writer
  // that takes them may be given pages and records for the same cpu.
  virtual bool WritePage(uint16_t cpu, std::span<const uint8_t> page) {
    (void)cpu;
    (void)page;
    return false;
  }
  // Where the recording daemon may write this writer's pages itself: the
  // file and its cpu regions (trace.dat, where the file system allows
  // regions: region_layout.h). None for other writers.
  struct PageRegions {
    int fd = -1;
    uint64_t region_bytes = 0;
    uint32_t cpus = 0;
  };
  virtual std::optional<PageRegions> RegionsForPages() const { return std::nullopt; }
  // The daemon has written the first `bytes` of `cpu`'s region. False when
  // that cannot be (no such region, or pages of that cpu came otherwise).
  virtual bool PagesOnDisk(uint16_t cpu, uint64_t bytes) {
    (void)cpu;
    (void)bytes;
    return false;
  }
  // The daemon's writes into the file failed with `error` (an errno): the
  // file keeps what was on disk before, as after a write of our own failed.
  virtual void PagesFailed(int error) { (void)error; }
  // Makes what was written so far survive the writer's process being killed
  // (a format that can: trace.dat). Called every few hundred ms; returns 0
  // or the errno that has stopped the file from growing.
  virtual int Checkpoint(const TraceInfo& info) {
    (void)info;
    return 0;
  }
  // Completes the file. Returns 0 or an errno (e.g. ENOSPC); the file then
  // keeps what was on disk before the failure where the format allows.
  virtual int Finish(const TraceInfo& info) = 0;
};

// Reads a whole file back: types and tasks first, then records in timestamp
// order (across cpus).
class TraceReader {
 public:
  virtual ~TraceReader() = default;
  virtual const TraceInfo& info() const = 0;
  virtual const std::vector<EventType>& event_types() const = 0;
  virtual const std::vector<Task>& tasks() const = 0;
  // Next record, or false at the end. `out->data` stays valid until the next call.
  virtual bool Next(Record* out) = 0;
};

}  // namespace udiag::record
