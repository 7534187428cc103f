// The sample trace. Records are laid out as a producer writes them: static
// fields at their offsets, dynamic data after them in field order.

#include "record/ctf/sample_trace.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <variant>

namespace udiag::record::ctf {
namespace {

// An integer for integer fields; bytes for arrays and structs (zero-padded),
// strings (a NUL is added) and dynamic arrays.
using Value = std::variant<uint64_t, std::string>;

EventType MakeType(uint32_t id, const char* system, const char* command) {
  schema::EventDescription description;
  int parsed = schema::ParseCommand(command, &description);
  if (parsed != 0) abort();  // a typo in this file
  EventType type{id, system, description.name, description.fields};
  return type;
}

std::vector<uint8_t> Layout(const EventType& type, uint32_t tid, const std::vector<Value>& values) {
  std::vector<uint8_t> record(schema::kCommonHeaderSize);
  for (const schema::Field& field : type.fields) record.resize(field.offset + field.size);
  uint16_t common_type = static_cast<uint16_t>(type.id);
  std::memcpy(record.data(), &common_type, 2);
  std::memcpy(record.data() + 4, &tid, 4);
  for (size_t i = 0; i < type.fields.size(); ++i) {
    const schema::Field& field = type.fields[i];
    uint8_t* at = record.data() + field.offset;
    if (const uint64_t* number = std::get_if<uint64_t>(&values[i])) {
      std::memcpy(at, number, field.size);  // little endian: the low bytes
      continue;
    }
    std::string bytes = std::get<std::string>(values[i]);
    if (field.kind == schema::FieldKind::kDataLoc || field.kind == schema::FieldKind::kRelLoc) {
      if (field.is_string) bytes.push_back('\0');
      uint32_t base = field.kind == schema::FieldKind::kRelLoc ? field.offset + 4 : 0;
      uint32_t loc = static_cast<uint32_t>(bytes.size() << 16 | (record.size() - base));
      std::memcpy(at, &loc, 4);
      record.insert(record.end(), bytes.begin(), bytes.end());
    } else {
      std::memcpy(at, bytes.data(), std::min<size_t>(bytes.size(), field.size));
    }
  }
  return record;
}

uint64_t Signed(int64_t value) { return static_cast<uint64_t>(value); }

}  // namespace

SampleTrace MakeSampleTrace() {
  SampleTrace trace;
  trace.info.cpus = 3;
  trace.info.hostname = "sample-host";
  trace.info.lost_at_end = 4;
  trace.types = {
      MakeType(100, "user_events",
               "ints s64 a_s64;u64 a_u64;s32 a_s32;u32 a_u32;int a_int;unsigned int a_uint;"
               "s16 a_s16;u16 a_u16;short a_short;unsigned short a_ushort;s8 a_s8;u8 a_u8;"
               "char a_char;unsigned char a_uchar"),
      MakeType(101, "user_events", "arrays char[8] name;unsigned char[0x4] tag;struct point pos 6"),
      MakeType(102, "user_events",
               "dynamic __data_loc char[] msg;__rel_loc char[] rel_msg;"
               "__data_loc unsigned char[] umsg;__rel_loc unsigned char[] urel;"
               "__data_loc u8[] blob;__rel_loc u8[] rel_blob"),
      MakeType(103, "user_events_multi", "multi.1f u32 count;__data_loc char[] text"),
      MakeType(104, "user_events", "empty"),
      MakeType(105, "user_events", "names u32 _count;u32 count;u32 string;u32 dup;u32 dup;u32 9lives"),
  };
  trace.tasks = {{1000, 1000, "main"}, {1000, 1001, "worker"}, {2000, 2000, "other \"app\"%"}};
  const std::vector<EventType>& t = trace.types;
  auto add = [&](uint64_t ts, uint16_t cpu, const Task& task, const EventType& type,
                 const std::vector<Value>& values, uint64_t lost_before = 0) {
    StoredRecord stored;
    stored.bytes = Layout(type, task.tid, values);
    stored.record = {ts, task.pid, task.tid, cpu, type.id, lost_before, {}};
    trace.records.push_back(std::move(stored));
  };
  const Task &main = trace.tasks[0], &worker = trace.tasks[1], &other = trace.tasks[2];
  uint64_t base = 5'000'000'000;
  add(base + 1000, 1, worker, t[0],
      {Signed(-5'000'000'000), ~uint64_t{0}, Signed(-123456), uint64_t{4'000'000'000}, Signed(-7),
       uint64_t{7}, Signed(-300), uint64_t{65000}, Signed(-2), uint64_t{2}, Signed(-100),
       uint64_t{200}, uint64_t{'A'}, uint64_t{255}});
  add(base + 2000, 0, main, t[1], {std::string("hello"), std::string("abc"), std::string("\x01\x02\x03\x04\x05\x06")},
      /*lost_before=*/2);
  add(base + 3000, 0, main, t[2],
      {std::string("data loc"), std::string("rel loc"), std::string("unsigned"), std::string(""),
       std::string("\xde\xad\xbe\xef", 4), std::string("\x00\x7f", 2)});
  add(base + 4000, 1, other, t[3], {uint64_t{42}, std::string("multi format")});
  add(base + 5000, 1, other, t[4], {}, /*lost_before=*/3);
  add(base + 6000, 0, worker, t[5], {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{4}, uint64_t{5}, uint64_t{6}});
  // Equal timestamps: readers merge ties in CPU order.
  add(base + 7000, 0, other, t[3], {uint64_t{43}, std::string("same time, other cpu")});
  add(base + 7000, 1, main, t[2],
      {std::string(""), std::string("x"), std::string("y"), std::string("z"), std::string(), std::string("\xff", 1)});
  for (StoredRecord& stored : trace.records) stored.record.data = stored.bytes;
  return trace;
}

SampleTrace MakeLargeTrace() {
  SampleTrace trace = MakeSampleTrace();
  std::vector<StoredRecord> records;
  for (int i = 0; i < kLargeTraceRecords; ++i) {
    StoredRecord copy = trace.records[i % trace.records.size()];
    // Pairs share a timestamp, CPU 1 first as readers merge ties.
    copy.record.timestamp = 1000 + i / 2;
    copy.record.cpu = 1 + i % 2;
    copy.record.lost_before = i % 1000 == 7 ? 1 : 0;
    records.push_back(std::move(copy));
  }
  for (StoredRecord& stored : records) stored.record.data = stored.bytes;
  trace.records = std::move(records);
  return trace;
}

int WriteSampleTrace(const SampleTrace& trace, TraceWriter* writer) {
  for (const EventType& type : trace.types) writer->AddEventType(type);
  for (const Task& task : trace.tasks) writer->AddTask(task);
  for (const StoredRecord& stored : trace.records) writer->Write(stored.record);
  return writer->Finish(trace.info);
}

}  // namespace udiag::record::ctf
