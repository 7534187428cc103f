// The `trigger` files through the tracefs tree: listing, errors, counts and
// the actions on the instance, with records delivered as the drain loop does.
#include "service/event_triggers.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "service/status_page.h"
#include "service/test_observer.h"
#include "service/tracefs_tree.h"

namespace udiag::service {
namespace {

const Caller kRoot{true, true, true};

class EventTriggersTest : public ::testing::Test {
 protected:
  EventTriggersTest()
      : page_(std::move(StatusPage::Create(EventRegistry::kFirstId, 64)).value()),
        registry_(&page_, &observer_),
        instances_(&registry_),
        tree_(&registry_, &instances_, [](uint32_t) { return std::string("app"); }) {
    EXPECT_EQ(tree_.Write("dynamic_events", "u:foo u32 seq\nu:bar u32 seq", true, kRoot), 0);
    foo_ = registry_.FindByTracepoint("user_events", "foo");
    bar_ = registry_.FindByTracepoint("user_events", "bar");
  }

  std::string Read(std::string_view path) {
    auto r = tree_.Read(path, kRoot);
    EXPECT_TRUE(r.ok()) << path << ": " << r.error();
    return r.ok() ? *r : "";
  }
  int Write(std::string_view path, std::string_view text) { return tree_.Write(path, text, true, kRoot); }
  void Emit(Event* e, uint32_t seq, uint64_t timestamp_ns = 1000) {
    uint16_t type = e->id;
    std::vector<uint8_t> record = {uint8_t(type), uint8_t(type >> 8), 0, 0, 7, 0, 0, 0,
                                   uint8_t(seq),  uint8_t(seq >> 8),  0, 0};
    instances_.Deliver(*e, {timestamp_ns, 7, 7, 0}, record);
  }

  StatusPage page_;
  RecordingObserver observer_;
  EventRegistry registry_;
  InstanceSet instances_;
  TracefsTree tree_;
  Event* foo_ = nullptr;
  Event* bar_ = nullptr;
};

constexpr const char* kFooTrigger = "events/user_events/foo/trigger";

TEST_F(EventTriggersTest, EmptyFileListsTheAvailableCommands) {
  EXPECT_EQ(Read(kFooTrigger),
            "# Available triggers:\n"
            "# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist\n");
}

TEST_F(EventTriggersTest, ListsNewestFirstAndRemoves) {
  ASSERT_EQ(Write(kFooTrigger, "traceoff:3 if seq > 10\n"), 0);
  ASSERT_EQ(Write(kFooTrigger, "enable_event:user_events:bar"), 0);
  EXPECT_EQ(Read(kFooTrigger), "enable_event:user_events:bar:unlimited\ntraceoff:count=3 if seq > 10\n");
  ASSERT_EQ(Write(kFooTrigger, "!traceon"), 0);  // traceon and traceoff are one kind
  EXPECT_EQ(Read(kFooTrigger), "enable_event:user_events:bar:unlimited\n");
  ASSERT_EQ(Write(kFooTrigger, "!traceon"), 0);  // nothing to remove: not an error
  ASSERT_EQ(Write(kFooTrigger, "!enable_event:user_events:bar"), 0);
  EXPECT_EQ(Read("events/user_events/foo/enable"), "0\n");
}

TEST_F(EventTriggersTest, Errors) {
  EXPECT_EQ(Write(kFooTrigger, "bogus"), EINVAL);
  EXPECT_EQ(Write(kFooTrigger, "traceon if nosuchfield == 1"), EINVAL);
  EXPECT_EQ(Write(kFooTrigger, "enable_event:user_events:nosuch"), EINVAL);
  EXPECT_EQ(Write(kFooTrigger, "!enable_event:user_events:nosuch"), EINVAL);
  ASSERT_EQ(Write(kFooTrigger, "traceon"), 0);
  EXPECT_EQ(Write(kFooTrigger, "traceoff:5"), EEXIST);
  ASSERT_EQ(Write(kFooTrigger, "enable_event:user_events:bar"), 0);
  EXPECT_EQ(Write(kFooTrigger, "disable_event:user_events:bar"), EEXIST);
  EXPECT_EQ(Write(kFooTrigger, "   \n"), 0);
  EXPECT_EQ(Read(kFooTrigger), "enable_event:user_events:bar:unlimited\ntraceon:unlimited\n");
}

TEST_F(EventTriggersTest, SoftModeMarksEnableAndKeepsNothing) {
  ASSERT_EQ(Write(kFooTrigger, "traceoff"), 0);
  EXPECT_EQ(Read("events/user_events/foo/enable"), "0*\n");
  EXPECT_EQ(Read("user_events_status"), "foo # Used by ftrace\nbar\n\nActive: 2\nBusy: 1\n");
  Emit(foo_, 1);
  EXPECT_EQ(instances_.top().buffer().entries(), 0u);  // fired, not kept
  EXPECT_EQ(Read("tracing_on"), "0\n");
  ASSERT_EQ(Write("events/user_events/foo/enable", "1"), 0);
  EXPECT_EQ(Read("events/user_events/foo/enable"), "1*\n");
  ASSERT_EQ(Write(kFooTrigger, "!traceoff"), 0);
  EXPECT_EQ(Read("events/user_events/foo/enable"), "1\n");
  // Triggers hold the event: it cannot be deleted while they exist.
  ASSERT_EQ(Write("events/user_events/foo/enable", "0"), 0);
  ASSERT_EQ(Write(kFooTrigger, "snapshot"), 0);
  EXPECT_EQ(Write("dynamic_events", "-:foo u32 seq"), EBUSY);
}

TEST_F(EventTriggersTest, CountsDecrementOnlyWhenTheTriggerActs) {
  ASSERT_EQ(Write("events/user_events/foo/enable", "1"), 0);
  ASSERT_EQ(Write(kFooTrigger, "traceoff:2 if seq > 10"), 0);
  Emit(foo_, 5);  // filter fails
  EXPECT_EQ(Read(kFooTrigger), "traceoff:count=2 if seq > 10\n");
  Emit(foo_, 11);  // acts: tracing off, the event itself not kept
  EXPECT_EQ(Read(kFooTrigger), "traceoff:count=1 if seq > 10\n");
  EXPECT_EQ(Read("tracing_on"), "0\n");
  Emit(foo_, 12);  // already off: no change, no count
  EXPECT_EQ(Read(kFooTrigger), "traceoff:count=1 if seq > 10\n");
  EXPECT_EQ(instances_.top().buffer().entries(), 1u);  // seq 5
}

TEST_F(EventTriggersTest, TraceonTurnsTracingBackOn) {
  ASSERT_EQ(Write("events/user_events/foo/enable", "1"), 0);
  ASSERT_EQ(Write("tracing_on", "0"), 0);
  ASSERT_EQ(Write(kFooTrigger, "traceon:1"), 0);
  Emit(foo_, 1);
  EXPECT_EQ(Read("tracing_on"), "1\n");
  EXPECT_EQ(Read(kFooTrigger), "traceon:count=0\n");
  EXPECT_EQ(instances_.top().buffer().entries(), 1u);
}

TEST_F(EventTriggersTest, EnableEventSoftEnablesItsTarget) {
  ASSERT_EQ(Write(kFooTrigger, "enable_event:user_events:bar:1"), 0);
  EXPECT_EQ(Read("events/user_events/bar/enable"), "0*\n");
  Emit(bar_, 1);
  EXPECT_EQ(instances_.top().buffer().entries(), 0u);
  Emit(foo_, 1);
  EXPECT_EQ(Read("events/user_events/bar/enable"), "1*\n");
  EXPECT_EQ(Read(kFooTrigger), "enable_event:user_events:bar:count=0\n");
  Emit(bar_, 2);
  EXPECT_EQ(instances_.top().buffer().entries(), 1u);
  // Removing the trigger leaves an enabled target enabled.
  ASSERT_EQ(Write(kFooTrigger, "!enable_event:user_events:bar"), 0);
  EXPECT_EQ(Read("events/user_events/bar/enable"), "1\n");
}

TEST_F(EventTriggersTest, DisableEventAndSnapshotPerInstance) {
  ASSERT_EQ(tree_.Mkdir("instances/a", 0, kRoot), 0);
  ASSERT_EQ(Write("instances/a/events/user_events/bar/enable", "1"), 0);
  ASSERT_EQ(Write("instances/a/events/user_events/foo/trigger", "disable_event:user_events:bar"), 0);
  ASSERT_EQ(Write("instances/a/events/user_events/foo/trigger", "snapshot if seq == 2"), 0);
  EXPECT_EQ(Read("instances/a/events/user_events/bar/enable"), "1*\n");
  EXPECT_EQ(Read("events/user_events/foo/trigger").substr(0, 1), "#");  // the top instance has none
  Emit(bar_, 1);
  Emit(foo_, 2);
  EXPECT_EQ(Read("instances/a/events/user_events/bar/enable"), "0*\n");
  Emit(bar_, 3);
  Instance* a = instances_.Find("a");
  ASSERT_NE(a->snapshot(), nullptr);
  EXPECT_EQ(a->snapshot()->entries(), 1u);
  EXPECT_EQ(a->buffer().entries(), 1u);
  ASSERT_EQ(tree_.Rmdir("instances/a", kRoot).ok(), true);
  EXPECT_EQ(Read("user_events_status"), "foo\nbar\n\nActive: 2\nBusy: 0\n");
}

TEST_F(EventTriggersTest, HistCountsAndControls) {
  const char* hist = "events/user_events/foo/hist";
  EXPECT_EQ(Read(hist), "");
  ASSERT_EQ(Write(kFooTrigger, "hist:keys=seq:sort=seq if seq < 100"), 0);
  EXPECT_EQ(Read("events/user_events/foo/enable"), "0*\n");
  EXPECT_EQ(Write(kFooTrigger, "hist:keys=seq:sort=seq if seq < 100"), EEXIST);
  EXPECT_EQ(Write(kFooTrigger, "hist:keys=seq:cont"), ENOENT);  // not the same histogram: no filter
  EXPECT_EQ(Write(kFooTrigger, "hist:keys=seq:clear"), ENOENT);
  EXPECT_EQ(Write(kFooTrigger, "hist:keys=nosuch"), EINVAL);
  Emit(foo_, 2);
  Emit(foo_, 1);
  Emit(foo_, 2);
  Emit(foo_, 200);  // filtered out
  EXPECT_EQ(Read(hist),
            "# event histogram\n#\n# trigger info: hist:keys=seq:vals=hitcount:sort=seq:size=2048 if seq < 100 [active]\n#\n\n"
            "{ seq:          1 } hitcount:          1\n"
            "{ seq:          2 } hitcount:          2\n"
            "\nTotals:\n    Hits: 3\n    Entries: 2\n    Dropped: 0\n");
  ASSERT_EQ(Write(kFooTrigger, "hist:keys=seq:sort=seq:pause if seq < 100"), 0);
  EXPECT_EQ(Read(kFooTrigger), "hist:keys=seq:vals=hitcount:sort=seq:size=2048 if seq < 100 [paused]\n");
  Emit(foo_, 3);
  EXPECT_EQ(Read(hist).find("seq:          3"), std::string::npos);
  ASSERT_EQ(Write(kFooTrigger, "hist:keys=seq:sort=seq:clear if seq < 100"), 0);
  EXPECT_NE(Read(hist).find("    Hits: 0\n"), std::string::npos);
  // A second histogram, and a truncating write removes both.
  ASSERT_EQ(Write(kFooTrigger, "hist:keys=common_pid.execname"), 0);
  EXPECT_NE(Read(hist).find("\n\n\n# event histogram\n"), std::string::npos);
  ASSERT_EQ(tree_.Write(kFooTrigger, "traceon", false, kRoot), 0);
  EXPECT_EQ(Read(kFooTrigger), "traceon:unlimited\n");
  EXPECT_EQ(Read(hist), "");
  ASSERT_EQ(Write(kFooTrigger, "!traceon"), 0);
  EXPECT_EQ(Read("events/user_events/foo/enable"), "0\n");
}

TEST_F(EventTriggersTest, HistRemovalNamesTheWholeHistogram) {
  ASSERT_EQ(Write(kFooTrigger, "hist:keys=seq if seq > 1"), 0);
  ASSERT_EQ(Write(kFooTrigger, "!hist:keys=seq"), 0);  // another histogram (no filter): nothing removed
  EXPECT_NE(Read(kFooTrigger).find("hist:keys=seq"), std::string::npos);
  ASSERT_EQ(Write(kFooTrigger, "!hist:keys=seq if seq > 1"), 0);
  EXPECT_EQ(Read(kFooTrigger).substr(0, 1), "#");
  EXPECT_EQ(Read("user_events_status"), "foo\nbar\n\nActive: 2\nBusy: 0\n");
}

TEST_F(EventTriggersTest, EnableHistAndDisableHistPauseTheTargetsHistograms) {
  ASSERT_EQ(Write("events/user_events/bar/trigger", "hist:keys=seq:pause"), 0);
  ASSERT_EQ(Write(kFooTrigger, "enable_hist:user_events:bar:1 if seq == 1"), 0);
  EXPECT_EQ(Write(kFooTrigger, "disable_hist:user_events:bar"), EEXIST);
  ASSERT_EQ(Write(kFooTrigger, "disable_event:user_events:bar"), 0);  // another kind
  Emit(bar_, 5);  // paused: not counted
  Emit(foo_, 1);  // continues bar's histogram
  Emit(bar_, 6);
  EXPECT_NE(Read("events/user_events/bar/hist").find("{ seq:          6 } hitcount:          1\n"), std::string::npos);
  EXPECT_EQ(Read("events/user_events/bar/hist").find("seq:          5"), std::string::npos);
  EXPECT_EQ(Read(kFooTrigger),
            "disable_event:user_events:bar:unlimited\nenable_hist:user_events:bar:count=0 if seq == 1\n");
}

// A `$var` reads the variable of the one histogram of the instance defining
// it, at the same key; that histogram cannot go while it is read.
TEST_F(EventTriggersTest, HistVariablesAcrossEvents) {
  constexpr const char* kBarTrigger = "events/user_events/bar/trigger";
  EXPECT_EQ(Write(kBarTrigger, "hist:keys=seq:lat=common_timestamp.usecs-$ts0:vals=$lat"),
            EINVAL);  // no ts0 yet
  EXPECT_NE(Read("error_log")
                .find("] hist:user_events:bar: error: Couldn't find variable\n"
                      "  Command: hist:keys=seq:lat=common_timestamp.usecs-$ts0:vals=$lat\n"
                      "                                                    ^\n"),
            std::string::npos)
      << Read("error_log");
  ASSERT_EQ(Write(kFooTrigger, "hist:keys=seq:ts0=common_timestamp.usecs"), 0);
  ASSERT_EQ(Write(kBarTrigger, "hist:keys=seq:lat=common_timestamp.usecs-$ts0:vals=$lat"), 0);
  Emit(foo_, 1, 5'000);
  Emit(bar_, 1, 12'000);
  Emit(bar_, 2, 12'000);  // no ts0 at seq 2: not counted
  EXPECT_NE(
      Read("events/user_events/bar/hist").find("{ seq:          1 } hitcount:          1  lat:          7\n"),
      std::string::npos)
      << Read("events/user_events/bar/hist");
  EXPECT_EQ(Write(kFooTrigger, "!hist:keys=seq:ts0=common_timestamp.usecs"), EBUSY);
  ASSERT_EQ(tree_.Write(kFooTrigger, "", false, kRoot), 0);  // a truncating write keeps it too
  EXPECT_EQ(
      Read(kFooTrigger),
      "hist:keys=seq:vals=hitcount:ts0=common_timestamp.usecs:sort=hitcount:size=2048:clock=mono [active]\n");
  ASSERT_EQ(Write(kBarTrigger, "!hist:keys=seq:lat=common_timestamp.usecs-$ts0:vals=$lat"), 0);
  EXPECT_EQ(Write(kFooTrigger, "!hist:keys=seq:ts0=common_timestamp.usecs"), 0);
  // Two histograms defining the name: the reference is ambiguous.
  ASSERT_EQ(Write(kFooTrigger, "hist:keys=seq:x=seq"), 0);
  ASSERT_EQ(Write(kBarTrigger, "hist:keys=seq:x=seq"), 0);
  EXPECT_EQ(Write(kBarTrigger, "hist:keys=seq:vals=$x"), EINVAL);
}

// name=: two events count into one table; each hist file shows it.
TEST_F(EventTriggersTest, NamedHistogramIsSharedBetweenEvents) {
  ASSERT_EQ(Write(kFooTrigger, "hist:name=both:keys=seq"), 0);
  EXPECT_EQ(Write("events/user_events/bar/trigger", "hist:name=both:keys=seq:vals=seq"), EINVAL);
  EXPECT_NE(Read("error_log")
                .find("error: Named hist trigger doesn't match existing named trigger (includes variables)\n"
                      "  Command: hist:name=both:keys=seq:vals=seq\n"
                      "                     ^\n"),
            std::string::npos)
      << Read("error_log");
  ASSERT_EQ(Write("events/user_events/bar/trigger", "hist:name=both:keys=seq if seq < 5"), 0);
  Emit(foo_, 1);
  Emit(bar_, 1);
  Emit(bar_, 9);  // filtered out by bar's own filter
  const std::string table = "{ seq:          1 } hitcount:          2\n\nTotals:\n    Hits: 2\n";
  EXPECT_NE(Read("events/user_events/foo/hist").find(table), std::string::npos)
      << Read("events/user_events/foo/hist");
  const std::string bar = Read("events/user_events/bar/hist");
  EXPECT_NE(bar.find("hist:name=both:keys=seq:vals=hitcount:sort=hitcount:size=2048 if seq < 5 [active]\n"),
            std::string::npos)
      << bar;
  EXPECT_NE(bar.find(table), std::string::npos) << bar;
  ASSERT_EQ(Write(kFooTrigger, "!hist:name=both:keys=seq"), 0);
  Emit(bar_, 2);  // the table lives on with bar
  EXPECT_NE(Read("events/user_events/bar/hist").find("    Hits: 3\n"), std::string::npos);
}

// The kernel's latency example: onmatch() generates a synthetic event, whose
// own histogram counts it and whose records fill the buffer when enabled.
TEST_F(EventTriggersTest, OnmatchGeneratesSyntheticEvents) {
  ASSERT_EQ(Write("synthetic_events", "latency u64 lat; pid_t pid"), 0);
  EXPECT_EQ(Read("synthetic_events"), "latency\tu64 lat; pid_t pid\n");
  EXPECT_EQ(Read("available_events"), "user_events:foo\nuser_events:bar\nsynthetic:latency\n");
  EXPECT_EQ(Read("user_events_status"), "foo\nbar\n\nActive: 2\nBusy: 0\n");
  EXPECT_NE(Read("events/synthetic/latency/format")
                .find("\tfield:pid_t pid;\toffset:16;\tsize:4;\tsigned:1;\n\n"
                      "print fmt: \"lat=%llu, pid=%d\", REC->lat, REC->pid\n"),
            std::string::npos);
  constexpr const char* kBarTrigger = "events/user_events/bar/trigger";
  ASSERT_EQ(Write(kFooTrigger, "hist:keys=seq:ts0=common_timestamp"), 0);
  EXPECT_EQ(Write(kBarTrigger,
                  "hist:keys=seq:lat=common_timestamp-$ts0:onmatch(user_events.nosuch).trace(latency,$lat,"
                  "common_pid)"),
            EINVAL);
  EXPECT_EQ(Write(kBarTrigger,
                  "hist:keys=seq:lat=common_timestamp-$ts0:onmatch(user_events.foo).trace(latency,$lat)"),
            EINVAL);  // one parameter per field
  EXPECT_EQ(
      Write(kBarTrigger, "hist:keys=seq:lat=common_timestamp-$ts0:onmatch(user_events.foo).nosuch($lat,seq)"),
      EINVAL);
  ASSERT_EQ(
      Write(kBarTrigger,
            "hist:keys=seq:lat=common_timestamp-$ts0:onmatch(user_events.foo).latency($lat,common_pid)"),
      0);
  ASSERT_EQ(Write("events/synthetic/latency/trigger", "hist:keys=lat"), 0);
  ASSERT_EQ(Write("events/synthetic/latency/enable", "1"), 0);
  Emit(foo_, 1, 1'000'000'000);
  Emit(bar_, 1, 1'000'000'250);
  Emit(bar_, 1, 1'000'000'300);  // ts0 read: no match
  EXPECT_NE(Read("events/synthetic/latency/hist").find("{ lat:        250 } hitcount:          1\n"),
            std::string::npos)
      << Read("events/synthetic/latency/hist");
  EXPECT_NE(Read("trace").find("     1.000000: latency: lat=250 pid=7\n"), std::string::npos)
      << Read("trace");
  EXPECT_EQ(Write("synthetic_events", "!latency"), EBUSY);
  EXPECT_EQ(tree_.Write("synthetic_events", "", false, kRoot), EBUSY);  // a truncating write
  ASSERT_EQ(
      Write(kBarTrigger,
            "!hist:keys=seq:lat=common_timestamp-$ts0:onmatch(user_events.foo).latency($lat,common_pid)"),
      0);
  ASSERT_EQ(Write("events/synthetic/latency/trigger", "!hist:keys=lat"), 0);
  ASSERT_EQ(Write("events/synthetic/latency/enable", "0"), 0);
  EXPECT_EQ(Write("synthetic_events", "!latency"), 0);
  EXPECT_EQ(Read("synthetic_events"), "");
  EXPECT_EQ(Write("synthetic_events", "!latency"), ENOENT);
}

}  // namespace
}  // namespace udiag::service
