#include "trigger/hist.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

namespace udiag::trigger {
namespace {

// "u32 seq; u64 bytes; char[8] name; struct blob[3] blob", after the 8-byte common header.
std::vector<schema::Field> Fields() {
  std::vector<schema::Field> f(4);
  f[3] = {"struct blob", "blob", schema::FieldKind::kInteger, 28, 3, false, false};
  f[0] = {"u32", "seq", schema::FieldKind::kInteger, 8, 4, false, false};
  f[1] = {"u64", "bytes", schema::FieldKind::kInteger, 12, 8, false, false};
  f[2] = {"char[8]", "name", schema::FieldKind::kInteger, 20, 8, false, true};
  return f;
}

std::vector<uint8_t> Record(uint32_t pid, uint32_t seq, uint64_t bytes, const char* name) {
  std::vector<uint8_t> r(28, 0);
  std::memcpy(r.data() + 4, &pid, 4);
  std::memcpy(r.data() + 8, &seq, 4);
  std::memcpy(r.data() + 12, &bytes, 8);
  std::memcpy(r.data() + 20, name, std::min<size_t>(strlen(name), 8));
  return r;
}

HistSpec Parsed(std::string_view param) {
  HistSpec spec;
  EXPECT_EQ(ParseHist(param, Fields(), &spec), 0) << param;
  return spec;
}

TEST(HistParse, InfoAsTheKernelPrintsIt) {
  EXPECT_EQ(HistInfo(Parsed("keys=seq"), false), "hist:keys=seq:vals=hitcount:sort=hitcount:size=2048 [active]\n");
  EXPECT_EQ(HistInfo(Parsed("key=common_pid.execname:val=hitcount,bytes:sort=bytes.descending,common_pid:size=100"), true),
            "hist:keys=common_pid.execname:vals=hitcount,bytes:sort=bytes.descending,common_pid.execname:size=128 [paused]\n");
  HistSpec named = Parsed("name=foo:keys=seq.hex,name:values=bytes.hex:sort=seq");
  named.filter = "seq > 1";
  EXPECT_EQ(HistInfo(named, false),
            "hist:name=foo:keys=seq.hex,name:vals=hitcount,bytes.hex:sort=seq.hex:size=2048 if seq > 1 [active]\n");
  EXPECT_EQ(HistInfo(Parsed("keys=bytes.buckets=100,CPU"), false),
            "hist:keys=bytes.buckets=100,common_cpu:vals=hitcount:sort=hitcount:size=2048 [active]\n");
}

TEST(HistParse, Errors) {
  HistSpec spec;
  for (std::string_view bad : {"",
                               "vals=bytes",
                               "keys=nosuch",
                               "keys=seq.bogus",
                               "keys=seq:vals=name",
                               "keys=seq:vals=seq.log2",
                               "keys=name.hex",
                               "keys=seq:sort=nosuch",
                               "keys=seq:sort=seq.up",
                               "keys=seq:size=64",
                               "keys=seq:size=262144",
                               "keys=seq:size=x",
                               "keys=seq,bytes,name,common_pid",
                               "keys=seq:vals=seq,bytes,common_pid",
                               "keys=seq:sort=hitcount,seq,hitcount",
                               "keys=seq:x=name",
                               "keys=$x",
                               "keys=seq-bytes",
                               "keys=seq:x=seq,x=bytes",
                               "keys=seq:clock=global",
                               "keys=seq:x=$",
                               "keys=seq:x=seq+",
                               "keys=seq:x=common_timestamp.msecs",
                               "keys=seq.buckets=0",
                               "keys=blob",
                               "keys=seq:vals=blob"}) {
    EXPECT_EQ(ParseHist(bad, Fields(), &spec), EINVAL) << bad;
  }
}

TEST(HistParse, SameHistIgnoresSizeAndControl) {
  EXPECT_TRUE(SameHist(Parsed("keys=seq:size=128"), Parsed("keys=seq:pause")));
  EXPECT_FALSE(SameHist(Parsed("keys=seq"), Parsed("keys=seq.hex")));
  EXPECT_FALSE(SameHist(Parsed("keys=seq"), Parsed("keys=seq:sort=hitcount.descending")));
}

void Add(Histogram& h, std::vector<uint8_t> record, std::string_view comm = "app", uint64_t ts = 0) {
  h.Add({{record, 1, comm}, ts});
}

TEST(HistRender, KernelLayout) {
  Histogram h(Parsed("keys=seq:vals=bytes"));
  Add(h, Record(7, 3, 100, "a"));
  Add(h, Record(7, 3, 50, "a"));
  Add(h, Record(7, 12345, 1, "a"));
  EXPECT_EQ(h.Render(),
            "# event histogram\n"
            "#\n"
            "# trigger info: hist:keys=seq:vals=hitcount,bytes:sort=hitcount:size=2048 [active]\n"
            "#\n"
            "\n"
            "{ seq:      12345 } hitcount:          1  bytes:          1\n"
            "{ seq:          3 } hitcount:          2  bytes:        150\n"
            "\n"
            "Totals:\n"
            "    Hits: 3\n"
            "    Entries: 2\n"
            "    Dropped: 0\n");
}

TEST(HistRender, Modifiers) {
  Histogram h(Parsed("keys=common_pid.execname,seq.hex,bytes.log2:sort=seq"));
  Add(h, Record(1877, 0x2a, 1000, "a"), "rtkit-daemon");
  Add(h, Record(2976, 0x10, 3, "a"), "gdbus");
  std::string out = h.Render();
  EXPECT_NE(out.find("{ common_pid: gdbus           [      2976], seq: 10, bytes: ~ 2^2  } hitcount:          1\n"
                     "{ common_pid: rtkit-daemon    [      1877], seq: 2a, bytes: ~ 2^10 } hitcount:          1\n"),
            std::string::npos)
      << out;
}

TEST(HistRender, StringsBucketsAndDescending) {
  Histogram h(Parsed("keys=name,bytes.buckets=100:sort=bytes.descending"));
  Add(h, Record(1, 0, 150, "get"));
  Add(h, Record(1, 0, 420, "put"));
  std::string out = h.Render();
  EXPECT_NE(out.find("{ name: put                                               , bytes: ~ 400-499 } hitcount:          1\n"
                     "{ name: get                                               , bytes: ~ 100-199 } hitcount:          1\n"),
            std::string::npos)
      << out;
}

TEST(HistRender, PercentAndGraphOfValues) {
  // sort=seq names the value first, as the kernel matches values before keys.
  Histogram h(Parsed("keys=seq:vals=bytes.percent,seq.graph:sort=seq"));
  Add(h, Record(1, 1, 1, ""));
  Add(h, Record(1, 4, 3, ""));
  std::string out = h.Render();
  EXPECT_NE(out.find("trigger info: hist:keys=seq:vals=hitcount,bytes.percent,seq.graph:sort=seq.graph:size=2048 [active]\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("{ seq:          1 } hitcount:          1  bytes (%):  25.00  seq: #####               \n"
                     "{ seq:          4 } hitcount:          1  bytes (%):  75.00  seq: ####################\n"),
            std::string::npos)
      << out;
}

TEST(HistRender, FullMapDropsNewKeys) {
  Histogram h(Parsed("keys=seq:size=128"));
  for (uint32_t i = 0; i < 130; ++i) Add(h, Record(1, i, 0, ""));
  Add(h, Record(1, 0, 0, ""));  // an existing key still counts
  std::string out = h.Render();
  EXPECT_NE(out.find("Totals:\n    Hits: 131\n    Entries: 128\n    Dropped: 2\n"), std::string::npos) << out;
  h.Clear();
  EXPECT_NE(h.Render().find("    Hits: 0\n    Entries: 0\n"), std::string::npos);
}

TEST(HistTimestamp, NanosecondsOrRoundedMicroseconds) {
  HistSpec spec = Parsed("keys=seq:vals=common_timestamp,common_timestamp.usecs");
  EXPECT_EQ(HistInfo(spec, false),
            "hist:keys=seq:vals=hitcount,common_timestamp,common_timestamp.usecs:sort=hitcount:size=2048:"
            "clock=mono [active]\n");
  Histogram h(std::move(spec));
  Add(h, Record(1, 5, 0, ""), "app", 2'000'499);
  Add(h, Record(1, 5, 0, ""), "app", 1'000'500);
  EXPECT_NE(h.Render().find("{ seq:          5 } hitcount:          2  common_timestamp:    3000999  "
                            "common_timestamp:       3001\n"),
            std::string::npos)
      << h.Render();
  EXPECT_EQ(HistInfo(Parsed("keys=common_timestamp.usecs"), false),
            "hist:keys=common_timestamp.usecs:vals=hitcount:sort=hitcount:size=2048:clock=mono [active]\n");
}

TEST(HistVars, DefinedPerKeyAndShownInTheInfoOnly) {
  HistSpec spec = Parsed("keys=seq:ts0=common_timestamp.usecs,b=bytes:c=bytes*2+1");
  EXPECT_EQ(HistInfo(spec, false),
            "hist:keys=seq:vals=hitcount:ts0=common_timestamp.usecs,b=bytes,c=bytes*2+1:sort=hitcount:size="
            "2048:clock=mono [active]\n");
  ASSERT_EQ(spec.vars.size(), 3u);
  Histogram h(std::move(spec));
  EXPECT_EQ(h.FindVar("b"), 1u);
  EXPECT_FALSE(h.FindVar("nosuch"));
  Add(h, Record(1, 5, 10, ""), "app", 7000);
  EXPECT_NE(h.Render().find("{ seq:          5 } hitcount:          1\n"), std::string::npos) << h.Render();
}

// The kernel's latency example: one event saves ts0 per key, another reads it once.
TEST(HistVars, ReferenceReadsTheSameKeyOnceAndSkipsUnsetKeys) {
  auto start = std::make_shared<Histogram>(Parsed("keys=seq:ts0=common_timestamp.usecs"));
  HistSpec end_spec = Parsed("keys=seq:lat=common_timestamp.usecs-$ts0:vals=$lat");
  ASSERT_EQ(end_spec.refs.size(), 2u);
  EXPECT_TRUE(end_spec.refs[0].read_once);
  EXPECT_FALSE(end_spec.refs[0].own);
  EXPECT_EQ(end_spec.refs[1].own, 0u);  // $lat: our own
  EXPECT_EQ(HistInfo(end_spec, false),
            "hist:keys=seq:vals=hitcount,$lat:lat=common_timestamp.usecs-$ts0:sort=hitcount:size=2048:clock="
            "mono [active]\n");
  Histogram end(std::move(end_spec));
  end.BindRef(0, start, 0);
  EXPECT_TRUE(start->referenced());
  Add(*start, Record(1, 5, 0, ""), "app", 10'000);
  Add(*start, Record(1, 6, 0, ""), "app", 20'000);
  Add(end, Record(1, 5, 0, ""), "app", 13'000);  // 3 us
  Add(end, Record(1, 5, 0, ""), "app", 14'000);  // ts0 was read: skipped
  Add(end, Record(1, 7, 0, ""), "app", 14'000);  // no ts0 at seq 7: skipped
  Add(*start, Record(1, 5, 0, ""), "app", 30'000);
  Add(end, Record(1, 5, 0, ""), "app", 38'000);  // 8 us
  EXPECT_NE(
      end.Render().find("{ seq:          5 } hitcount:          2  lat:         11\n\nTotals:\n    Hits: 2\n"
                        "    Entries: 1\n"),
      std::string::npos)
      << end.Render();
  end.Unbind();
  EXPECT_FALSE(start->referenced());
}

TEST(HistVars, ExpressionsAndDivisionByZero) {
  Histogram h(Parsed("keys=seq:q=bytes/seq:vals=$q"));
  Add(h, Record(1, 4, 10, ""));
  Add(h, Record(1, 0, 10, ""));
  std::string out = h.Render();
  EXPECT_NE(out.find("{ seq:          4 } hitcount:          1  q:          2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("{ seq:          0 } hitcount:          1  q: 18446744073709551615\n"),
            std::string::npos)
      << out;
}

// name=: another event counts into the same table, reading its own fields' places.
TEST(HistNamed, SharedTableReadsEachEventsOwnFields) {
  HistSpec first = Parsed("name=shared:keys=seq:vals=bytes");
  // The same fields one slot further (an event whose first field is a u32 pad).
  std::vector<schema::Field> shifted = Fields();
  for (schema::Field& f : shifted) f.offset += 4;
  HistSpec second;
  ASSERT_EQ(ParseHist("name=shared:keys=seq:vals=bytes", shifted, &second), 0);
  second.filter = "seq > 1";
  EXPECT_TRUE(CanShare(first, second));
  EXPECT_FALSE(CanShare(first, Parsed("name=shared:keys=seq:vals=seq")));
  EXPECT_FALSE(CanShare(first, Parsed("name=shared:keys=bytes:vals=bytes")));
  Histogram h(std::move(first));
  Add(h, Record(1, 3, 10, ""));
  std::vector<uint8_t> other(32, 0);
  const uint32_t seq = 3;
  const uint64_t bytes = 5;
  std::memcpy(other.data() + 12, &seq, 4);
  std::memcpy(other.data() + 16, &bytes, 8);
  h.Add({{other, 1, "b"}, 0}, nullptr, &second);
  std::string out = h.Render(&second);
  EXPECT_NE(out.find("# trigger info: hist:name=shared:keys=seq:vals=hitcount,bytes:sort=hitcount:size=2048 "
                     "if seq > 1 [active]\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("{ seq:          3 } hitcount:          2  bytes:         15\n"), std::string::npos)
      << out;
}

struct RecordingSink : HistSink {
  void Trace(size_t action, std::span<const uint64_t> values) override {
    traced.emplace_back(action, std::vector<uint64_t>(values.begin(), values.end()));
  }
  void Snapshot() override { ++snapshots; }
  std::vector<std::pair<size_t, std::vector<uint64_t>>> traced;
  int snapshots = 0;
};

TEST(HistActions, OnmatchTraceGivesTheParameters) {
  HistSpec spec =
      Parsed("keys=seq:lat=common_timestamp-$ts0:onmatch(user_events.start).trace(latency,$lat,seq)");
  EXPECT_EQ(HistInfo(spec, false),
            "hist:keys=seq:vals=hitcount:lat=common_timestamp-$ts0:sort=hitcount:size=2048:clock=mono"
            ":onmatch(user_events.start).trace(latency,$lat,seq) [active]\n");
  ASSERT_EQ(spec.actions.size(), 1u);
  EXPECT_EQ(spec.actions[0].match_event, "start");
  EXPECT_EQ(spec.actions[0].synth, "latency");
  auto start = std::make_shared<Histogram>(Parsed("keys=seq:ts0=common_timestamp"));
  Histogram end(std::move(spec));
  end.BindRef(0, start, 0);
  RecordingSink sink;
  start->Add({{Record(1, 4, 0, ""), 0, "a"}, 100});
  end.Add({{Record(1, 4, 0, ""), 0, "a"}, 130}, &sink);
  end.Add({{Record(1, 4, 0, ""), 0, "a"}, 140}, &sink);  // ts0 already read: no event
  ASSERT_EQ(sink.traced.size(), 1u);
  EXPECT_EQ(sink.traced[0].second, (std::vector<uint64_t>{30, 4}));
  end.Unbind();
  // The older form names the synthetic event as the action.
  HistSpec old_form = Parsed("keys=seq:onmatch(a.b).latency(seq)");
  EXPECT_FALSE(old_form.actions[0].trace_keyword);
  EXPECT_EQ(old_form.actions[0].synth, "latency");
}

TEST(HistActions, Errors) {
  HistSpec spec;
  for (std::string_view bad :
       {"keys=seq:onmatch(ab).trace(x,seq)", "keys=seq:onmatch(a.b).save(seq)",
        "keys=seq:onmax(seq).save(seq)", "keys=seq:onmax($x).save()", "keys=seq:onmax($x).save",
        "keys=seq:onmatch(a.b).trace()", "keys=seq:onmatch(a.b).trace(x,name)",
        "keys=seq:onmax($x).snapshot(seq)", "keys=seq:onwhat($x).snapshot()"}) {
    EXPECT_EQ(ParseHist(bad, Fields(), &spec), EINVAL) << bad;
  }
}

// The kernel's onmax($v).save(...) lines: the entry's max and the fields of the event that made it.
TEST(HistActions, OnmaxSaveAndOnchange) {
  Histogram h(Parsed("keys=seq:b=bytes:onmax($b).save(name,common_pid):onchange($b).save(bytes)"));
  RecordingSink sink;
  h.Add({{Record(77, 1, 10, "ten"), 0, "a"}, 0}, &sink);
  h.Add({{Record(78, 1, 30, "thirty"), 0, "a"}, 0}, &sink);
  h.Add({{Record(79, 1, 20, "twenty"), 0, "a"}, 0}, &sink);
  std::string out = h.Render();
  EXPECT_NE(out.find("{ seq:          1 } hitcount:          3\n"
                     "\tmax:         30  name: thirty                            common_pid:         78\n"
                     "\tchanged:         20  bytes:         20\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(sink.snapshots, 0);
}

TEST(HistActions, SnapshotFollowsTheHistogramWideMax) {
  Histogram h(Parsed("keys=seq:b=bytes:onmax($b).snapshot()"));
  RecordingSink sink;
  h.Add({{Record(1, 1, 10, ""), 0, "a"}, 0}, &sink);
  h.Add({{Record(1, 2, 5, ""), 0, "a"}, 0}, &sink);  // a new max of seq 2, not of the histogram
  h.Add({{Record(1, 2, 12, ""), 0, "a"}, 0}, &sink);
  EXPECT_EQ(sink.snapshots, 2);
  std::string out = h.Render();
  EXPECT_NE(
      out.find(
          "{ seq:          2 } hitcount:          2\n"
          "\n"
          "Snapshot taken (see tracing/snapshot).  Details:\n"
          "\ttriggering value { onmax($b) }:         12\ttriggered by event with key: { seq:          2 }\n"
          "\nTotals:\n"),
      std::string::npos)
      << out;
}

}  // namespace
}  // namespace udiag::trigger
