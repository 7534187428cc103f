#include "schema/eventheader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace udiag::schema {
namespace {

// The convention's published numbers, written out independently of the
// decoder so the tests check it against the format, not against itself.
constexpr uint8_t kStruct = 1, kValue8 = 2, kValue16 = 3, kValue32 = 4, kValue64 = 5, kValue128 = 6,
                  kZChar8 = 7, kZChar16 = 8, kZChar32 = 9, kLenChar8 = 10, kLenChar16 = 11, kLenChar32 = 12,
                  kBinary = 13;
constexpr uint8_t kCArray = 0x20, kVArray = 0x40, kChain = 0x80;
constexpr uint8_t kFmtSigned = 2, kFmtHex = 3, kFmtErrno = 4, kFmtPid = 5, kFmtTime = 6, kFmtBool = 7,
                  kFmtFloat = 8, kFmtHexBytes = 9, kFmtString8 = 10, kFmtStringUtf = 11, kFmtUtfBom = 12,
                  kFmtUuid = 15, kFmtPort = 16, kFmtIpAddress = 17, kFmtIpv6 = 18;

constexpr const char* kHeaderFieldsCommand =
    " u8 eventheader_flags;u8 version;u16 id;u16 tag;u8 opcode;u8 level";

// Builds an EventHeader record: common header, event header, extensions
// (metadata, activity id), payload.
class EventBuilder {
 public:
  explicit EventBuilder(std::string name, bool little_endian = true) : little_endian_(little_endian) {
    metadata_.insert(metadata_.end(), name.begin(), name.end());
    metadata_.push_back(0);
  }

  // A field definition: name, encoding byte (with flags), then an optional
  // format byte, tag and constant array length.
  EventBuilder& Def(std::string_view name, uint8_t encoding, int format = -1, int count = -1) {
    metadata_.insert(metadata_.end(), name.begin(), name.end());
    metadata_.push_back(0);
    if (format >= 0) encoding |= kChain;
    if (count >= 0) encoding |= kCArray;
    metadata_.push_back(encoding);
    if (format >= 0) metadata_.push_back(static_cast<uint8_t>(format));
    if (count >= 0) Put(&metadata_, static_cast<uint64_t>(count), 2);
    return *this;
  }

  EventBuilder& Int(uint64_t value, size_t size) {
    Put(&data_, value, size);
    return *this;
  }
  EventBuilder& Bytes(std::vector<uint8_t> bytes) {
    data_.insert(data_.end(), bytes.begin(), bytes.end());
    return *this;
  }
  EventBuilder& Text(std::string_view text) {  // char8 units, no terminator
    data_.insert(data_.end(), text.begin(), text.end());
    return *this;
  }
  EventBuilder& Activity(std::vector<uint8_t> ids) {
    activity_ = std::move(ids);
    return *this;
  }
  EventBuilder& NoMetadata() {
    with_metadata_ = false;
    return *this;
  }
  EventBuilder& Header(uint8_t version, uint16_t id, uint16_t tag, uint8_t opcode) {
    version_ = version;
    id_ = id;
    tag_ = tag;
    opcode_ = opcode;
    return *this;
  }

  std::vector<uint8_t> Record() const {
    std::vector<uint8_t> out = {0x2a, 0, 0, 0, 0x10, 0, 0, 0};  // common header
    bool extensions = with_metadata_ || !activity_.empty();
    out.push_back(static_cast<uint8_t>(0x01 | (little_endian_ ? 0x02 : 0) | (extensions ? 0x04 : 0)));
    out.push_back(version_);
    Put(&out, id_, 2);
    Put(&out, tag_, 2);
    out.push_back(opcode_);
    out.push_back(4);  // level
    if (!activity_.empty()) {
      Put(&out, activity_.size(), 2);
      Put(&out, 2 | (with_metadata_ ? 0x8000 : 0), 2);
      out.insert(out.end(), activity_.begin(), activity_.end());
    }
    if (with_metadata_) {
      Put(&out, metadata_.size(), 2);
      Put(&out, 1, 2);
      out.insert(out.end(), metadata_.begin(), metadata_.end());
    }
    out.insert(out.end(), data_.begin(), data_.end());
    return out;
  }

 private:
  void Put(std::vector<uint8_t>* out, uint64_t value, size_t size) const {
    for (size_t i = 0; i < size; ++i) {
      size_t shift = little_endian_ ? i : size - 1 - i;
      out->push_back(static_cast<uint8_t>(value >> (8 * shift)));
    }
  }

  bool little_endian_;
  bool with_metadata_ = true;
  uint8_t version_ = 0;
  uint16_t id_ = 0;
  uint16_t tag_ = 0;
  uint8_t opcode_ = 0;
  std::vector<uint8_t> metadata_;
  std::vector<uint8_t> data_;
  std::vector<uint8_t> activity_;
};

std::vector<Field> HeaderFields(std::string_view tp_name) {
  EventDescription event;
  EXPECT_EQ(ParseCommand(std::string(tp_name) + kHeaderFieldsCommand, &event), 0);
  return event.fields;
}

// The trace-line text of `record` as tracepoint MyProvider_L4K1.
std::string Line(const std::vector<uint8_t>& record) {
  return RenderTraceBody("MyProvider_L4K1", HeaderFields("MyProvider_L4K1"), record);
}

EventHeaderEvent Decode(const std::vector<uint8_t>& record) { return DecodeEventHeaderRecord(record); }

TEST(EventHeaderName, SplitsProviderLevelKeywordAndOptions) {
  auto name = ParseEventHeaderName("My_Provider_L5K1fGperfHx2");
  ASSERT_TRUE(name);
  EXPECT_EQ(name->provider, "My_Provider");
  EXPECT_EQ(name->level, 5);
  EXPECT_EQ(name->keyword, 0x1fu);
  EXPECT_EQ(name->options, "GperfHx2");
  EXPECT_EQ(name->group, "perf");

  auto plain = ParseEventHeaderName("P_Lff0Kffffffffffffffff");
  EXPECT_FALSE(plain) << "level is one byte";
  plain = ParseEventHeaderName("P_LffKffffffffffffffff");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->level, 0xff);
  EXPECT_EQ(plain->keyword, ~uint64_t{0});
  EXPECT_EQ(plain->group, "");
}

TEST(EventHeaderName, RejectsWhatTheGrammarDoesNot) {
  for (std::string_view bad :
       {"MyProvider", "_L4K1", "L4K1", "P_L0K1", "P_L04K1", "P_LK1", "P_L4K", "P_L4K01", "P_L4K1g", "P_L4KA",
        "P_L4K1BbAa", "P_L4K1G_x", "P_l4K1", "P_L4k1", "P_L4K1 ", "P_L4K1ffffffffffffffff"}) {
    EXPECT_FALSE(ParseEventHeaderName(bad)) << bad;
  }
  EXPECT_FALSE(ParseEventHeaderName(std::string(251, 'p') + "_L4K1"));  // 256 characters
  EXPECT_TRUE(ParseEventHeaderName(std::string(250, 'p') + "_L4K1"));
}

TEST(EventHeaderDetect, NeedsTheNameAndExactlyTheHeaderFields) {
  EXPECT_TRUE(IsEventHeaderEvent("MyProvider_L4K1", HeaderFields("MyProvider_L4K1")));
  EXPECT_FALSE(IsEventHeaderEvent("MyProvider", HeaderFields("MyProvider_L4K1")));

  EventDescription event;
  ASSERT_EQ(ParseCommand("MyProvider_L4K1 u8 eventheader_flags;u8 version;u16 id;u16 tag;u8 opcode", &event),
            0);
  EXPECT_FALSE(IsEventHeaderEvent("MyProvider_L4K1", event.fields));
  ASSERT_EQ(ParseCommand("MyProvider_L4K1 u8 eventheader_flags;u8 version;u16 id;u16 tag;u8 "
                         "opcode;u8 level;u32 extra",
                         &event),
            0);
  EXPECT_FALSE(IsEventHeaderEvent("MyProvider_L4K1", event.fields));
  ASSERT_EQ(
      ParseCommand("MyProvider_L4K1 u8 eventheader_flags;u8 version;u32 id;u8 opcode;u8 level;u8 x", &event),
      0);
  EXPECT_FALSE(IsEventHeaderEvent("MyProvider_L4K1", event.fields));
}

TEST(EventHeaderRender, TraceLineShowsEventNameAndTypedFields) {
  auto record = EventBuilder("MyEvent;attr=1")
                    .Def("x;unit=s", kValue32, kFmtSigned)
                    .Def("msg", kZChar8)
                    .Int(static_cast<uint32_t>(-5), 4)
                    .Text("hi")
                    .Int(0, 1)
                    .Record();
  EXPECT_EQ(Line(record), "MyProvider_L4K1: MyEvent { x=-5 msg=\"hi\" }");

  auto empty = EventBuilder("Empty").Record();
  EXPECT_EQ(Line(empty), "MyProvider_L4K1: Empty { }");
}

TEST(EventHeaderRender, PlainUserEventsAreUntouched) {
  std::vector<uint8_t> record = {0x2a, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0};
  EventDescription event;
  ASSERT_EQ(ParseCommand("MyProvider_L4K1 u32 count", &event), 0);
  EXPECT_EQ(RenderTraceBody("MyProvider_L4K1", event.fields, record), "MyProvider_L4K1: count=0x5 (5)");
}

TEST(EventHeaderDecode, HeaderAttributesAndActivityIdsBecomeMeta) {
  std::vector<uint8_t> ids(32);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint8_t>(i);
  auto record =
      EventBuilder("Start").Header(2, 7, 0x55, 1).Activity(ids).Def("n", kValue8).Int(9, 1).Record();
  EventHeaderEvent event = Decode(record);
  EXPECT_EQ(event.error, "");
  EXPECT_EQ(event.id, 7);
  EXPECT_EQ(event.version, 2);
  EXPECT_EQ(event.tag, 0x55);
  EXPECT_EQ(event.opcode, 1);
  EXPECT_EQ(event.level, 4);
  EXPECT_EQ(Line(record),
            "MyProvider_L4K1: Start { n=9 } id=7 version=2 tag=85 opcode=1 "
            "activity=00010203-0405-0607-0809-0a0b0c0d0e0f "
            "related_activity=10111213-1415-1617-1819-1a1b1c1d1e1f");
  DecodedEvent decoded = ToDecodedEvent(event, "MyProvider_L4K1");
  EXPECT_EQ(decoded.name, "Start");
  ASSERT_EQ(decoded.meta.size(), 6u);
  EXPECT_EQ(decoded.meta[4].kind, ValueKind::kUuid);
}

TEST(EventHeaderDecode, ScalarFormats) {
  struct Case {
    uint8_t encoding;
    int format;
    std::vector<uint8_t> data;  // little-endian
    std::string text;
  };
  const Case cases[] = {
      {kValue8, -1, {0xff}, "255"},
      {kValue8, kFmtSigned, {0xff}, "-1"},
      {kValue16, kFmtSigned, {0x00, 0x80}, "-32768"},
      {kValue32, -1, {0x01, 0x02, 0x03, 0x04}, "67305985"},
      {kValue64, kFmtSigned, {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "-2"},
      {kValue64, -1, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "18446744073709551615"},
      {kValue32, kFmtHex, {0xef, 0xbe, 0xad, 0xde}, "0xdeadbeef"},
      {kValue32, kFmtErrno, {2, 0, 0, 0}, "ENOENT(2)"},
      {kValue32, kFmtErrno, {0xff, 0x7f, 0, 0}, "ERRNO(32767)"},
      {kValue32, kFmtPid, {0xd2, 0x04, 0, 0}, "1234"},
      {kValue32, kFmtTime, {0, 0, 0, 0}, "1970-01-01T00:00:00Z"},
      {kValue64, kFmtTime, {0x80, 0x3d, 0x94, 0x65, 0, 0, 0, 0}, "2024-01-02T16:44:48Z"},
      {kValue64, kFmtTime, {0, 0, 0, 0, 0, 0, 0, 0x7f}, "9151314442816847872"},
      {kValue8, kFmtBool, {1}, "true"},
      {kValue32, kFmtBool, {0, 0, 0, 0}, "false"},
      {kValue8, kFmtBool, {2}, "BOOL(2)"},
      {kValue32, kFmtFloat, {0, 0, 0xc0, 0x3f}, "1.5"},
      {kValue64, kFmtFloat, {0, 0, 0, 0, 0, 0, 0xf0, 0x7f}, "inf"},
      {kValue64, kFmtFloat, {0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f}, "0.1"},
      {kValue32, kFmtHexBytes, {1, 2, 0xab, 0xff}, "01,02,ab,ff"},
      {kValue8, kFmtString8, {0xe9}, "\"\xc3\xa9\""},
      {kValue16, kFmtStringUtf, {0xac, 0x20}, "\"\xe2\x82\xac\""},
      {kValue16, kFmtPort, {0x1f, 0x90}, "8080"},
      {kValue32, kFmtIpAddress, {10, 0, 0, 1}, "10.0.0.1"},
      {kValue128,
       -1,
       {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
       "00,01,02,03,04,05,06,07,08,09,0a,0b,0c,0d,0e,0f"},
      {kValue128,
       kFmtUuid,
       {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8},
       "12345678-9abc-def0-0102-030405060708"},
      {kValue128, kFmtIpAddress, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "::1"},
      {kValue128, kFmtIpv6, {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "2001:db8::1"},
      // Formats that do not fit the size fall back to unsigned.
      {kValue8, kFmtFloat, {7}, "7"},
      {kValue64, kFmtPort, {1, 0, 0, 0, 0, 0, 0, 0}, "1"},
      {kValue16, kFmtIpAddress, {1, 0}, "1"},
      {kValue8, 99, {3}, "3"},
  };
  for (const Case& c : cases) {
    auto record = EventBuilder("E").Def("v", c.encoding, c.format).Bytes(c.data).Record();
    EventHeaderEvent event = Decode(record);
    EXPECT_EQ(event.error, "");
    ASSERT_EQ(event.values.size(), 1u);
    EXPECT_EQ(RenderValueText(event.values[0]), c.text)
        << "encoding " << int{c.encoding} << " format " << c.format;
  }
}

TEST(EventHeaderDecode, StringsInEveryWidthAndForm) {
  std::vector<uint8_t> utf16 = {'h', 0, 'i', 0, 0x3d, 0xd8, 0x00, 0xde};  // "hi😀"
  std::vector<uint8_t> utf32 = {0x00, 0xf6, 0x01, 0x00, 'x', 0, 0, 0};    // "😀x"
  auto record = EventBuilder("Strings")
                    .Def("z8", kZChar8)
                    .Def("z16", kZChar16)
                    .Def("z32", kZChar32)
                    .Def("n8", kLenChar8)
                    .Def("n16", kLenChar16)
                    .Def("n32", kLenChar32)
                    .Def("latin1", kZChar8, kFmtString8)
                    .Def("bom", kLenChar8, kFmtUtfBom)
                    .Def("bom16", kLenChar8, kFmtUtfBom)
                    .Def("zbytes", kZChar8, kFmtHexBytes)
                    .Def("bin", kBinary)
                    .Def("bintext", kBinary, kFmtStringUtf)
                    .Text("a\"b")
                    .Int(0, 1)
                    .Bytes(utf16)
                    .Int(0, 2)
                    .Bytes(utf32)
                    .Int(0, 4)
                    .Int(3, 2)
                    .Text("abc")
                    .Int(2, 2)
                    .Bytes({'o', 0, 'k', 0})
                    .Int(1, 2)
                    .Bytes({'!', 0, 0, 0})
                    .Bytes({0xe9, 't', 0xe9, 0})
                    .Int(5, 2)
                    .Bytes({0xef, 0xbb, 0xbf, 'y', 'o'})
                    .Int(6, 2)
                    .Bytes({0xfe, 0xff, 0, 'h', 0, 'i'})
                    .Bytes({'a', 'b', 0})
                    .Int(3, 2)
                    .Bytes({0, 1, 0xff})
                    .Int(2, 2)
                    .Text("ok")
                    .Record();
  EventHeaderEvent event = Decode(record);
  EXPECT_EQ(event.error, "");
  EXPECT_EQ(RenderValuesText(event.values),
            "z8=\"a\\\"b\" z16=\"hi\xf0\x9f\x98\x80\" z32=\"\xf0\x9f\x98\x80x\" n8=\"abc\" "
            "n16=\"ok\" n32=\"!\" latin1=\"\xc3\xa9t\xc3\xa9\" bom=\"yo\" bom16=\"hi\" "
            "zbytes=61,62 bin=00,01,ff bintext=\"ok\"");
}

TEST(EventHeaderDecode, CountedFieldsWithFixedSizeFormatsAreNullable) {
  std::vector<uint8_t> uuid(16, 0x0f);
  auto record = EventBuilder("Nullable")
                    .Def("none", kBinary, kFmtSigned)
                    .Def("two", kBinary, kFmtSigned)
                    .Def("odd", kBinary, kFmtSigned)
                    .Def("id", kLenChar8, kFmtUuid)
                    .Def("flag", kLenChar8, kFmtBool)
                    .Int(0, 2)
                    .Int(2, 2)
                    .Int(0xfffe, 2)
                    .Int(3, 2)
                    .Bytes({1, 2, 3})
                    .Int(16, 2)
                    .Bytes(uuid)
                    .Int(1, 2)
                    .Bytes({1})
                    .Record();
  EventHeaderEvent event = Decode(record);
  EXPECT_EQ(event.error, "");
  EXPECT_EQ(RenderValuesText(event.values),
            "none=null two=-2 odd=01,02,03 id=0f0f0f0f-0f0f-0f0f-0f0f-0f0f0f0f0f0f flag=true");
  EXPECT_EQ(event.values[0].kind, ValueKind::kNull);
  EXPECT_EQ(RenderFieldsJson(event.values),
            R"({"none":null,"two":-2,"odd":"01,02,03","id":"0f0f0f0f-0f0f-0f0f-0f0f-0f0f0f0f0f0f",)"
            R"("flag":true})");
}

TEST(EventHeaderDecode, InvalidUtfBecomesReplacementCharacters) {
  auto record = EventBuilder("E")
                    .Def("s", kLenChar8)
                    .Def("w", kLenChar16)
                    .Int(2, 2)
                    .Bytes({0xc3, 0x28})
                    .Int(1, 2)
                    .Bytes({0x00, 0xdc})  // lone low surrogate
                    .Record();
  EXPECT_EQ(RenderValuesText(Decode(record).values), "s=\"\xef\xbf\xbd(\" w=\"\xef\xbf\xbd\"");
}

TEST(EventHeaderDecode, ConstantAndVariableArrays) {
  auto record = EventBuilder("Arrays")
                    .Def("c", kValue16, -1, 3)
                    .Def("v", kValue32 | kVArray, kFmtSigned)
                    .Def("none", kValue8 | kVArray)
                    .Def("names", kZChar8 | kVArray)
                    .Int(1, 2)
                    .Int(2, 2)
                    .Int(3, 2)
                    .Int(2, 2)
                    .Int(static_cast<uint32_t>(-1), 4)
                    .Int(7, 4)
                    .Int(0, 2)
                    .Int(2, 2)
                    .Bytes({'a', 0, 'b', 'c', 0})
                    .Record();
  EventHeaderEvent event = Decode(record);
  EXPECT_EQ(event.error, "");
  EXPECT_EQ(RenderValuesText(event.values), "c=[1,2,3] v=[-1,7] none=[] names=[\"a\",\"bc\"]");
  EXPECT_EQ(event.values[0].kind, ValueKind::kArray);
}

TEST(EventHeaderDecode, NestedStructsAndArraysOfStructs) {
  auto record = EventBuilder("Nested")
                    .Def("outer", kStruct, 2)
                    .Def("a", kValue8)
                    .Def("inner", kStruct, 1)
                    .Def("b", kZChar8)
                    .Def("points", kStruct | kVArray, 2)
                    .Def("x", kValue8)
                    .Def("y", kValue8)
                    .Def("after", kValue8)
                    .Int(1, 1)
                    .Text("s")
                    .Int(0, 1)
                    .Int(2, 2)
                    .Bytes({10, 11, 20, 21})
                    .Int(99, 1)
                    .Record();
  EventHeaderEvent event = Decode(record);
  EXPECT_EQ(event.error, "");
  EXPECT_EQ(RenderValuesText(event.values),
            "outer={ a=1 inner={ b=\"s\" } } points=[{ x=10 y=11 },{ x=20 y=21 }] after=99");
  ASSERT_EQ(event.values.size(), 3u);
  EXPECT_EQ(event.values[0].kind, ValueKind::kStruct);
  EXPECT_EQ(event.values[1].items[1].items[1].name, "y");
}

TEST(EventHeaderDecode, BigEndianEvents) {
  auto record = EventBuilder("Big", /*little_endian=*/false)
                    .Header(0, 0x0102, 0, 0)
                    .Def("n", kValue32)
                    .Def("w", kLenChar16)
                    .Def("v", kValue16 | kVArray)
                    .Int(0x01020304, 4)
                    .Int(1, 2)
                    .Bytes({0, 'Z'})
                    .Int(1, 2)
                    .Int(0x0a0b, 2)
                    .Record();
  EventHeaderEvent event = Decode(record);
  EXPECT_EQ(event.error, "");
  EXPECT_EQ(event.id, 0x0102);
  EXPECT_EQ(RenderValuesText(event.values), "n=16909060 w=\"Z\" v=[2571]");
}

TEST(EventHeaderDecode, WithoutMetadataThePayloadStaysBytes) {
  auto record = EventBuilder("unused").NoMetadata().Header(1, 9, 0, 0).Bytes({1, 2}).Record();
  EXPECT_EQ(Line(record), "MyProvider_L4K1: <no metadata> { payload=01,02 } id=9 version=1");
  DecodedEvent decoded = ToDecodedEvent(Decode(record), "MyProvider_L4K1");
  EXPECT_EQ(decoded.name, "MyProvider_L4K1");
}

TEST(EventHeaderDecode, ErrorsKeepWhatDecodedBefore) {
  auto truncated = EventBuilder("E").Def("a", kValue8).Def("b", kValue32).Int(1, 1).Int(2, 2).Record();
  EventHeaderEvent event = Decode(truncated);
  EXPECT_EQ(event.error, "truncated value of \"b\"");
  EXPECT_EQ(Line(truncated), "MyProvider_L4K1: E { a=1 } <error: truncated value of \"b\">");
  EXPECT_EQ(RenderFieldsJson(ToDecodedEvent(event, "MyProvider_L4K1").values),
            R"({"a":1,"decode_error":"truncated value of \"b\""})");

  auto unterminated = EventBuilder("E").Def("s", kZChar16).Bytes({'a', 0, 'b'}).Record();
  EXPECT_EQ(Decode(unterminated).error, "truncated value of \"s\"");

  auto bad_encoding = EventBuilder("E").Def("q", 14).Record();
  EXPECT_EQ(Decode(bad_encoding).error, "field \"q\" has invalid encoding 0x0e");

  auto both_arrays = EventBuilder("E").Def("q", kValue8 | kVArray, -1, 2).Record();
  EXPECT_NE(Decode(both_arrays).error, "");

  auto empty_struct = EventBuilder("E").Def("s", kStruct, 0).Record();
  EXPECT_NE(Decode(empty_struct).error, "");

  auto short_struct = EventBuilder("E").Def("s", kStruct, 3).Def("a", kValue8).Int(1, 1).Record();
  EXPECT_EQ(Decode(short_struct).error, "struct \"s\" is nested too deeply or lacks members");

  std::vector<uint8_t> header_only = {1, 2, 3};
  EXPECT_EQ(DecodeEventHeader(header_only).error, "truncated event header");
}

TEST(EventHeaderDecode, DeepNestingIsRefused) {
  EventBuilder builder("Deep");
  for (int i = 0; i < 100; ++i) builder.Def("s", kStruct, 1);
  builder.Def("leaf", kValue8).Int(1, 1);
  EXPECT_EQ(Decode(builder.Record()).error, "struct \"s\" is nested too deeply or lacks members");
}

TEST(EventHeaderDecode, EmptyArraysCannotMultiplyWork) {
  // 65535 x 65535 x 65535 elements that consume no payload bytes.
  auto record = EventBuilder("Bomb")
                    .Def("a", kStruct, 1, 65535)
                    .Def("b", kStruct, 1, 65535)
                    .Def("c", kValue8, -1, 0)
                    .Record();
  EXPECT_EQ(Decode(record).error, "too many values");
}

// A rich event cut at every length and corrupted at random: the decoder must
// stay inside the buffer (ASan checks) and never crash or hang.
TEST(EventHeaderDecode, HostileInputNeverCrashes) {
  std::vector<uint8_t> ids(16, 0x11);
  auto record = EventBuilder("Rich")
                    .Activity(ids)
                    .Def("n", kValue64, kFmtSigned)
                    .Def("s", kZChar16)
                    .Def("arr", kStruct | kVArray, 2)
                    .Def("x", kLenChar32)
                    .Def("y", kValue128, kFmtUuid)
                    .Def("c", kValue32, kFmtFloat, 2)
                    .Int(5, 8)
                    .Bytes({'h', 0, 0, 0})
                    .Int(1, 2)
                    .Int(1, 2)
                    .Bytes({'q', 0, 0, 0})
                    .Bytes(std::vector<uint8_t>(16, 0x22))
                    .Bytes(std::vector<uint8_t>(8, 0x40))
                    .Record();
  std::span<const uint8_t> payload = std::span<const uint8_t>(record).subspan(8);
  ASSERT_EQ(DecodeEventHeader(payload).error, "");
  for (size_t length = 0; length < payload.size(); ++length) {
    std::vector<uint8_t> cut(payload.begin(), payload.begin() + length);
    EventHeaderEvent event = DecodeEventHeader(cut);
    EXPECT_NE(event.error, "") << "cut at " << length;
    RenderEventHeaderText(event);
  }
  std::mt19937 random(12345);
  size_t decoded_cleanly = 0;
  for (int round = 0; round < 20000; ++round) {
    std::vector<uint8_t> mutated(payload.begin(), payload.end());
    int flips = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < flips; ++i) mutated[random() % mutated.size()] = static_cast<uint8_t>(random());
    if (random() % 4 == 0) mutated.resize(random() % mutated.size());
    EventHeaderEvent event = DecodeEventHeader(mutated);
    decoded_cleanly += event.error.empty();
    RenderEventHeaderText(event);
    RenderFieldsJson(event.values);
  }
  EXPECT_GT(decoded_cleanly, 0u);
}

}  // namespace
}  // namespace udiag::schema
