// The format texts the writer stores, checked with libtraceevent (the parser
// trace-cmd and KernelShark use), and read back with our own parser.
#include <event-parse.h>
#include <trace-seq.h>

#include <map>
#include <memory>

#include <gtest/gtest.h>

#include "record/tracedat/format_parser.h"
#include "record/tracedat/test_trace.h"
#include "record/tracedat/tracedat_layout.h"
#include "schema/event_description.h"

namespace udiag::record::tracedat {
namespace {

struct TepDeleter {
  void operator()(tep_handle* tep) const { tep_free(tep); }
};

class FormatTepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tep_.reset(tep_alloc());
    tep_set_long_size(tep_.get(), 8);
    tep_set_file_bigendian(tep_.get(), TEP_LITTLE_ENDIAN);
    tep_set_local_bigendian(tep_.get(), TEP_LITTLE_ENDIAN);
    for (const Task& task : trace_.tasks) tep_register_comm(tep_.get(), task.comm.c_str(), task.tid);
  }

  // "comm-tid [cpu] ns: name: fields" as libtraceevent prints a record.
  std::string Print(const testing::OwnedRecord& owned) {
    tep_record record{};
    record.ts = owned.record.timestamp;
    record.cpu = owned.record.cpu;
    record.size = static_cast<int>(owned.bytes.size());
    record.data = const_cast<uint8_t*>(owned.bytes.data());
    trace_seq seq;
    trace_seq_init(&seq);
    tep_print_event(tep_.get(), &seq, &record, "%s-%d [%03d] %d: %s: %s", TEP_PRINT_COMM,
                    TEP_PRINT_PID, TEP_PRINT_CPU, TEP_PRINT_TIME, TEP_PRINT_NAME, TEP_PRINT_INFO);
    std::string text(seq.buffer, seq.len);
    trace_seq_destroy(&seq);
    return text;
  }

  testing::SampleTrace trace_ = testing::MakeSampleTrace(1000000000000ull, false);
  std::unique_ptr<tep_handle, TepDeleter> tep_;
};

TEST_F(FormatTepTest, EveryFormatParsesAndRecordsPrintTheirValues) {
  for (const EventType& type : trace_.types) {
    std::string text = schema::FormatFile(TraceDatEventName(type.name), type.id, type.fields);
    tep_event* event = nullptr;
    ASSERT_EQ(tep_parse_format(tep_.get(), &event, text.c_str(), text.size(), type.system.c_str()), 0)
        << text;
    ASSERT_NE(event, nullptr);
    EXPECT_EQ(event->id, static_cast<int>(type.id));
    // Four common fields plus the event's own, at the offsets the model has.
    ASSERT_EQ(event->format.nr_fields, static_cast<int>(type.fields.size())) << type.name;
    for (const schema::Field& field : type.fields) {
      tep_format_field* parsed = tep_find_field(event, field.name.c_str());
      ASSERT_NE(parsed, nullptr) << field.name;
      EXPECT_EQ(parsed->offset, static_cast<int>(field.offset)) << field.name;
      EXPECT_EQ(parsed->size, static_cast<int>(field.size)) << field.name;
    }
  }

  // libtraceevent prints 1- and 2-byte "%d" fields without sign extension
  // (a=-5 shows as 251): that is how the kernel's own format prints too.
  const std::map<std::string, std::string> expected = {
      {"ints",
       "writer-main-100 [000] 1000000000000: ints: a=251 b=250 c=65236 d=65000 e=-70000 "
       "f=4000000000 g=-5000000000 h=18000000000000000000 i=65 j=200 k=65534 l=2 m=-123456 "
       "n=123456"},
      {"arrays", "other-proc-200 [001] 1000000001000: arrays: tag=alpha label=beta"},
      {"dyn",
       "writer-aux-101 [000] 1000000002000: dyn: path=/tmp/x note=hello world blob=196659 "
       "words=524318 ustr=unsigned uints=262183"},
      {"st", "writer-main-100 [001] 1000000003000: st: p=7 q=0"},
      {"noargs", "other-proc-200 [000] 1000000004000: noargs: "},
      {"big", "writer-aux-101 [001] 1000000005000: big: n=42 text=" + std::string(150, 'z')},
      {"multi.1f", "writer-main-100 [000] 1000200000000: multi_1f: x=7 y=1099511627776"},
      {"multi.20", "other-proc-200 [001] 1000200001000: multi_20: y=abc z=65527"},
  };
  ASSERT_EQ(trace_.records.size(), expected.size());
  for (size_t i = 0; i < trace_.records.size(); ++i) {
    const std::string& name = trace_.types[i].name;  // one record per type, in type order
    EXPECT_EQ(Print(trace_.records[i]), expected.at(name));
  }
}

TEST_F(FormatTepTest, OurParserReadsBackEveryFormat) {
  for (const EventType& type : trace_.types) {
    EventType parsed;
    ASSERT_EQ(ParseFormatText(schema::FormatFile(type.name, type.id, type.fields), &parsed), 0);
    EXPECT_EQ(parsed.id, type.id);
    EXPECT_EQ(parsed.name, type.name);
    ASSERT_EQ(parsed.fields.size(), type.fields.size());
    for (size_t i = 0; i < type.fields.size(); ++i) {
      const schema::Field& want = type.fields[i];
      const schema::Field& got = parsed.fields[i];
      EXPECT_EQ(got.type, want.type);
      EXPECT_EQ(got.name, want.name);
      EXPECT_EQ(got.kind, want.kind) << want.name;
      EXPECT_EQ(got.offset, want.offset);
      EXPECT_EQ(got.size, want.size);
      EXPECT_EQ(got.is_signed, want.is_signed) << want.name;
      EXPECT_EQ(got.is_string, want.is_string) << want.name;
    }
  }
}

TEST(FormatParserTest, RejectsBrokenFormats) {
  EventType type;
  EXPECT_EQ(ParseFormatText("ID: 3\n", &type), EINVAL);
  EXPECT_EQ(ParseFormatText("name: x\n", &type), EINVAL);
  EXPECT_EQ(ParseFormatText("name: x\nID: 3\n\tfield:u32 a;\toffset:8;\tsize:4;\n", &type), EINVAL);
  EXPECT_EQ(ParseFormatText("name: x\nID: 3\n\tfield:a;\toffset:8;\tsize:4;\tsigned:0;\n", &type), EINVAL);
  EXPECT_EQ(ParseFormatText("name: x\nID: 3\n\tfield:u32 a;\toffset:-8;\tsize:4;\tsigned:0;\n", &type),
            EINVAL);
  EXPECT_EQ(ParseFormatText("name: x\nID: 3\n\tfield:u32 a;\toffset:8;\tsize:4;\tsigned:0;\n", &type), 0);
}

}  // namespace
}  // namespace udiag::record::tracedat
