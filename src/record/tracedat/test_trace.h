// Test support: event types covering every user_events field type
// (user_events.md §4.2), record bytes built field by field, and a small
// fixed trace of them from three tasks on two cpus.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "record/trace_model.h"

namespace udiag::record::tracedat::testing {

// An event type parsed from a registration command ("name fields...").
EventType MakeEventType(uint32_t id, std::string system, std::string_view command);

// The bytes of one record of `type`: the common header, then fields set by
// name; dynamic fields append their bytes after the fixed part.
class RecordBytes {
 public:
  RecordBytes(const EventType& type, uint32_t tid);
  RecordBytes& Int(std::string_view field, int64_t value);
  RecordBytes& Fixed(std::string_view field, std::string_view bytes);    // arrays, structs
  RecordBytes& Dynamic(std::string_view field, std::string_view bytes);  // loc fields
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  const schema::Field& Find(std::string_view name) const;
  const EventType& type_;
  std::vector<uint8_t> bytes_;
};

struct OwnedRecord {
  Record record;  // record.data points into `bytes`
  std::vector<uint8_t> bytes;
};

// The fixed trace: its types, tasks, records (time order) and info.
struct SampleTrace {
  std::vector<EventType> types;
  std::vector<Task> tasks;
  std::vector<OwnedRecord> records;
  TraceInfo info;
};

// Every field type, 3 tasks, 2 cpus, timestamps from `base_ns`, and a loss
// of 5 events before one record on cpu 1 when `with_loss`.
SampleTrace MakeSampleTrace(uint64_t base_ns, bool with_loss);

// Writes `trace` through `writer` in model order. Returns Finish's result.
int WriteTrace(TraceWriter& writer, const SampleTrace& trace);

// Runs a shell command; returns its stdout+stderr and sets *status to its
// exit status.
std::string RunCommand(const std::string& command, int* status);

// A fresh directory under $TMPDIR (or /tmp) for one test's files, removed
// with everything in it when destroyed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace udiag::record::tracedat::testing
