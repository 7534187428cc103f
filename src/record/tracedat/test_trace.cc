#include "record/tracedat/test_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "schema/event_description.h"

namespace udiag::record::tracedat::testing {

EventType MakeEventType(uint32_t id, std::string system, std::string_view command) {
  schema::EventDescription description;
  if (schema::ParseCommand(command, &description) != 0) {
    throw std::invalid_argument("bad test command: " + std::string(command));
  }
  return EventType{id, std::move(system), description.name, description.fields};
}

RecordBytes::RecordBytes(const EventType& type, uint32_t tid) : type_(type) {
  uint32_t fixed_end = schema::kCommonHeaderSize;
  for (const schema::Field& field : type.fields) fixed_end = field.offset + field.size;
  bytes_.assign(fixed_end, 0);
  uint16_t common_type = static_cast<uint16_t>(type.id);
  std::memcpy(bytes_.data(), &common_type, sizeof(common_type));
  std::memcpy(bytes_.data() + 4, &tid, sizeof(tid));
}

const schema::Field& RecordBytes::Find(std::string_view name) const {
  for (const schema::Field& field : type_.fields) {
    if (field.name == name) return field;
  }
  throw std::invalid_argument("no field " + std::string(name));
}

RecordBytes& RecordBytes::Int(std::string_view name, int64_t value) {
  const schema::Field& field = Find(name);
  std::memcpy(bytes_.data() + field.offset, &value, field.size);  // little-endian low bytes
  return *this;
}

RecordBytes& RecordBytes::Fixed(std::string_view name, std::string_view bytes) {
  const schema::Field& field = Find(name);
  std::memcpy(bytes_.data() + field.offset, bytes.data(), std::min<size_t>(bytes.size(), field.size));
  return *this;
}

RecordBytes& RecordBytes::Dynamic(std::string_view name, std::string_view bytes) {
  const schema::Field& field = Find(name);
  uint32_t offset = static_cast<uint32_t>(bytes_.size());
  if (field.kind == schema::FieldKind::kRelLoc) offset -= field.offset + 4;
  uint32_t loc = static_cast<uint32_t>(bytes.size()) << 16 | offset;
  std::memcpy(bytes_.data() + field.offset, &loc, sizeof(loc));
  bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
  return *this;
}

namespace {

void Add(SampleTrace& trace, uint64_t timestamp, uint16_t cpu, uint32_t tid, uint64_t lost_before,
         const RecordBytes& bytes) {
  OwnedRecord owned;
  owned.bytes = bytes.bytes();
  uint16_t event_id = 0;
  std::memcpy(&event_id, owned.bytes.data(), sizeof(event_id));
  uint32_t pid = tid;
  for (const Task& task : trace.tasks) {
    if (task.tid == tid) pid = task.pid;
  }
  owned.record = Record{timestamp, pid, tid, cpu, event_id, lost_before, {}};
  trace.records.push_back(std::move(owned));
}

const EventType& TypeNamed(const SampleTrace& trace, std::string_view name) {
  for (const EventType& type : trace.types) {
    if (type.name == name) return type;
  }
  throw std::invalid_argument("no type " + std::string(name));
}

}  // namespace

SampleTrace MakeSampleTrace(uint64_t base_ns, bool with_loss) {
  SampleTrace trace;
  trace.types = {
      MakeEventType(1001, "user_events",
                    "ints s8 a;u8 b;s16 c;u16 d;s32 e;u32 f;s64 g;u64 h;char i;unsigned char j;"
                    "short k;unsigned short l;int m;unsigned int n"),
      MakeEventType(1002, "user_events", "arrays char[8] tag;unsigned char[6] label"),
      MakeEventType(1003, "user_events",
                    "dyn __data_loc char[] path;__rel_loc char[] note;__data_loc u8[] blob;"
                    "__rel_loc u32[] words;__data_loc unsigned char[] ustr;"
                    "__rel_loc unsigned int[] uints"),
      MakeEventType(1004, "user_events", "st struct pair p 8;struct big q 12"),
      MakeEventType(1005, "user_events", "noargs"),
      MakeEventType(1006, "user_events", "big u32 n;char[200] text"),
      MakeEventType(1010, "user_events_multi", "multi.1f u32 x;u64 y"),
      MakeEventType(1011, "user_events_multi", "multi.20 char[4] y;s16 z"),
  };
  trace.tasks = {{100, 100, "writer-main"}, {100, 101, "writer-aux"}, {200, 200, "other-proc"}};
  trace.info.cpus = 2;
  trace.info.hostname = "udiag-test";

  const EventType& ints = TypeNamed(trace, "ints");
  Add(trace, base_ns, 0, 100, 0,
      RecordBytes(ints, 100)
          .Int("a", -5).Int("b", 250).Int("c", -300).Int("d", 65000).Int("e", -70000)
          .Int("f", 4000000000).Int("g", -5000000000).Int("h", 18000000000000000000ull)
          .Int("i", 65).Int("j", 200).Int("k", -2).Int("l", 2).Int("m", -123456).Int("n", 123456));
  Add(trace, base_ns + 1000, 1, 200, 0,
      RecordBytes(TypeNamed(trace, "arrays"), 200).Fixed("tag", "alpha").Fixed("label", "beta"));
  Add(trace, base_ns + 2000, 0, 101, 0,
      RecordBytes(TypeNamed(trace, "dyn"), 101)
          .Dynamic("path", std::string_view("/tmp/x\0", 7))
          .Dynamic("note", std::string_view("hello world\0", 12))
          .Dynamic("blob", std::string_view("\x01\x02\xff", 3))
          .Dynamic("words", std::string_view("\x01\x00\x00\x00\x02\x00\x00\x00", 8))
          .Dynamic("ustr", std::string_view("unsigned\0", 9))
          .Dynamic("uints", std::string_view("\x03\x00\x00\x00", 4)));
  Add(trace, base_ns + 3000, 1, 100, 0,
      RecordBytes(TypeNamed(trace, "st"), 100)
          .Fixed("p", std::string_view("\x07\x00\x00\x00\x00\x00\x00\x00", 8))
          .Fixed("q", "abcdefghijkl"));
  Add(trace, base_ns + 4000, 0, 200, 0, RecordBytes(TypeNamed(trace, "noargs"), 200));
  Add(trace, base_ns + 5000, 1, 101, with_loss ? 5 : 0,
      RecordBytes(TypeNamed(trace, "big"), 101).Int("n", 42).Fixed("text", std::string(150, 'z')));
  // 200 ms later: more than a 27-bit delta, so cpu 0 needs a time extend.
  Add(trace, base_ns + 200000000, 0, 100, 0,
      RecordBytes(TypeNamed(trace, "multi.1f"), 100).Int("x", 7).Int("y", 1099511627776));
  Add(trace, base_ns + 200001000, 1, 200, 0,
      RecordBytes(TypeNamed(trace, "multi.20"), 200).Fixed("y", "abc").Int("z", -9));
  for (OwnedRecord& owned : trace.records) owned.record.data = owned.bytes;
  return trace;
}

int WriteTrace(TraceWriter& writer, const SampleTrace& trace) {
  for (const EventType& type : trace.types) writer.AddEventType(type);
  for (const Task& task : trace.tasks) writer.AddTask(task);
  for (const OwnedRecord& owned : trace.records) writer.Write(owned.record);
  return writer.Finish(trace.info);
}

std::string RunCommand(const std::string& command, int* status) {
  std::string output;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    *status = -1;
    return output;
  }
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, got);
  int raw = ::pclose(pipe);
  *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return output;
}

TempDir::TempDir() {
  const char* base = getenv("TMPDIR");
  path_ = std::string(base != nullptr ? base : "/tmp") + "/udiag-tracedat-XXXXXX";
  if (mkdtemp(path_.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace udiag::record::tracedat::testing
