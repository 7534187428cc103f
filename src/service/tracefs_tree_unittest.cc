#include "service/tracefs_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "service/event_probe.h"
#include "service/status_page.h"
#include "service/test_observer.h"

namespace udiag::service {
namespace {

const Caller kRoot{true, true, true};
const Caller kConsumer{false, true, false};
const Caller kProducer{true, false, false};

class TracefsTreeTest : public ::testing::Test {
 protected:
  TracefsTreeTest()
      : page_(std::move(StatusPage::Create(EventRegistry::kFirstId, 64)).value()),
        registry_(&page_, &observer_),
        instances_(&registry_),
        tree_(&registry_, &instances_, [](uint32_t) { return std::string("app"); }) {}

  std::string Read(std::string_view path, const Caller& c = kRoot) {
    auto r = tree_.Read(path, c);
    EXPECT_TRUE(r.ok()) << path << ": " << r.error();
    return r.ok() ? *r : "";
  }

  StatusPage page_;
  RecordingObserver observer_;
  EventRegistry registry_;
  InstanceSet instances_;
  TracefsTree tree_;
};

TEST_F(TracefsTreeTest, EmptyStatus) { EXPECT_EQ(Read("user_events_status"), "\nActive: 0\nBusy: 0\n"); }

TEST_F(TracefsTreeTest, DynamicEventsCreateShowDelete) {
  ASSERT_EQ(tree_.Write("dynamic_events", "u:test u32 count\n", true, kRoot), 0);
  ASSERT_EQ(tree_.Write("/dynamic_events", "u:other char[20] msg; __rel_loc char[] data", true, kRoot), 0);
  EXPECT_EQ(Read("dynamic_events"), "u:test u32 count\nu:other char[20] msg; __rel_loc char[] data\n");
  EXPECT_EQ(Read("user_events_status"), "test\nother\n\nActive: 2\nBusy: 0\n");
  EXPECT_EQ(Read("available_events"), "user_events:test\nuser_events:other\n");
  EXPECT_EQ(tree_.Write("dynamic_events", "-:test", true, kRoot), ENOENT);  // fields must match
  EXPECT_EQ(tree_.Write("dynamic_events", "!u:test u32 count", true, kRoot), 0);
  EXPECT_EQ(Read("dynamic_events"), "u:other char[20] msg; __rel_loc char[] data\n");
}

TEST_F(TracefsTreeTest, DynamicEventsNeedPrivilegeAndRejectForeignLines) {
  EXPECT_EQ(tree_.Write("dynamic_events", "u:test u32 a", true, kConsumer), EPERM);
  EXPECT_EQ(tree_.Write("dynamic_events", "p:kprobe do_sys_open", true, kRoot), EINVAL);
  EXPECT_EQ(tree_.Write("dynamic_events", "u:test u32 a", true, kProducer), EACCES);
}

TEST_F(TracefsTreeTest, TruncatingOpenDeletesAll) {
  ASSERT_EQ(tree_.Write("dynamic_events", "u:a\nu:b\n", true, kRoot), 0);
  ASSERT_EQ(tree_.Write("dynamic_events", "u:c", false, kRoot), 0);
  EXPECT_EQ(Read("dynamic_events"), "u:c\n");
}

TEST_F(TracefsTreeTest, EnableSetsStatusAndUsedBy) {
  ASSERT_EQ(tree_.Write("dynamic_events", "u:test u32 count", true, kRoot), 0);
  EXPECT_EQ(Read("events/user_events/test/enable"), "0\n");
  ASSERT_EQ(tree_.Write("events/user_events/test/enable", "1\n", false, kConsumer), 0);
  EXPECT_EQ(Read("events/user_events/test/enable"), "1\n");
  EXPECT_EQ(Read("user_events_status"), "test # Used by ftrace\n\nActive: 1\nBusy: 1\n");
  EXPECT_EQ(Read("set_event"), "user_events:test\n");
  EXPECT_EQ(tree_.Write("events/user_events/test/enable", "2", false, kConsumer), EINVAL);
  // An enabled event is busy: it cannot be deleted.
  EXPECT_EQ(tree_.Write("dynamic_events", "-:test u32 count", true, kRoot), EBUSY);
  ASSERT_EQ(tree_.Write("events/enable", "0", false, kConsumer), 0);
  EXPECT_EQ(Read("user_events_status"), "test\n\nActive: 1\nBusy: 0\n");
}

TEST_F(TracefsTreeTest, NumericFilesParseAsTheKernel) {
  ASSERT_EQ(tree_.Write("dynamic_events", "u:test u32 count", true, kRoot), 0);
  const char* enable = "events/user_events/test/enable";
  // What write(fd, "1", sizeof("1")) sends: the NUL ends the number.
  EXPECT_EQ(tree_.Write(enable, std::string_view("1\0", 2), false, kConsumer), 0);
  EXPECT_EQ(Read(enable), "1\n");
  EXPECT_EQ(tree_.Write(enable, std::string_view("0\n\0junk", 7), false, kConsumer), 0);
  EXPECT_EQ(Read(enable), "0\n");
  EXPECT_EQ(tree_.Write(enable, "+1", false, kConsumer), 0);
  EXPECT_EQ(tree_.Write("tracing_on", std::string_view("0\0", 2), false, kConsumer), 0);
  EXPECT_EQ(Read("tracing_on"), "0\n");
  EXPECT_EQ(tree_.Write("buffer_size_kb", std::string_view("2048\0", 5), false, kConsumer), 0);
  EXPECT_EQ(Read("buffer_size_kb"), "2048\n");
  for (std::string_view bad : {std::string_view(""), std::string_view("\0", 1), std::string_view(" 1"),
                               std::string_view("1 "), std::string_view("1\n\n"), std::string_view("0x1"),
                               std::string_view("-1"), std::string_view("+"), std::string_view("\n")}) {
    EXPECT_EQ(tree_.Write(enable, bad, false, kConsumer), EINVAL) << bad;
    EXPECT_EQ(tree_.Write("tracing_on", bad, false, kConsumer), EINVAL) << bad;
  }
  // Only the first 127 bytes are read.
  EXPECT_EQ(tree_.Write("tracing_on", std::string(126, '0') + "1x", false, kConsumer), 0);
  EXPECT_EQ(Read("tracing_on"), "1\n");
  EXPECT_EQ(tree_.Write("tracing_on", std::string(125, '0') + "1x", false, kConsumer), EINVAL);
}

TEST_F(TracefsTreeTest, ReadmeAndDataFileExistAtTheTopOnly) {
  auto top = tree_.List("", kProducer);
  ASSERT_TRUE(top.ok());
  auto has = [](const std::vector<DirEntry>& entries, std::string_view name) {
    return std::any_of(entries.begin(), entries.end(), [&](const DirEntry& e) { return e.name == name; });
  };
  EXPECT_TRUE(has(*top, "README"));
  EXPECT_TRUE(has(*top, "user_events_data"));
  EXPECT_NE(Read("README", kProducer).find("user_events_data"), std::string::npos);
  EXPECT_EQ(tree_.Read("user_events_data", kProducer).error(), EINVAL);
  ASSERT_EQ(tree_.Mkdir("instances/one", 0, kConsumer), 0);
  auto inst = tree_.List("instances/one", kConsumer);
  ASSERT_TRUE(inst.ok());
  EXPECT_FALSE(has(*inst, "README"));
  EXPECT_FALSE(has(*inst, "user_events_data"));
}

TEST_F(TracefsTreeTest, SetEventAcceptsGlobsAndRejectsUnknown) {
  ASSERT_EQ(tree_.Write("dynamic_events", "u:a\nu:b\n", true, kRoot), 0);
  ASSERT_EQ(tree_.Write("set_event", "user_events:*", false, kConsumer), 0);
  EXPECT_EQ(Read("events/user_events/enable"), "1\n");
  ASSERT_EQ(tree_.Write("set_event", "!a", true, kConsumer), 0);
  EXPECT_EQ(Read("events/user_events/enable"), "X\n");
  EXPECT_EQ(tree_.Write("set_event", "nosuch", true, kConsumer), EINVAL);
}

TEST_F(TracefsTreeTest, FormatAndIdForProducers) {
  ASSERT_EQ(tree_.Write("dynamic_events", "u:test u32 count", true, kRoot), 0);
  std::string id = Read("events/user_events/test/id", kProducer);
  std::string format = Read("events/user_events/test/format", kProducer);
  EXPECT_EQ(format.substr(0, 12), "name: test\nI");
  EXPECT_NE(format.find("ID: " + id), std::string::npos);
  EXPECT_EQ(tree_.Read("trace", kProducer).error(), EACCES);
  EXPECT_EQ(tree_.Write("events/user_events/test/enable", "1", false, kProducer), EACCES);
}

TEST_F(TracefsTreeTest, MissingPathsAndDirectories) {
  EXPECT_EQ(tree_.Read("nope", kRoot).error(), ENOENT);
  EXPECT_EQ(tree_.Read("events/user_events/test/enable", kRoot).error(), ENOENT);
  EXPECT_EQ(tree_.Read("events", kRoot).error(), EISDIR);
  EXPECT_EQ(tree_.Read("../etc/passwd", kRoot).error(), ENOENT);
  auto root = tree_.List("", kRoot);
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->front().name, "events");
}

TEST_F(TracefsTreeTest, TraceShowsEntriesAndClears) {
  ASSERT_EQ(tree_.Write("dynamic_events", "u:test u32 count", true, kRoot), 0);
  Event* e = registry_.FindByTracepoint("user_events", "test");
  instances_.SetEnabled(instances_.top(), e, true);
  uint16_t type = e->id;
  std::vector<uint8_t> record = {uint8_t(type), uint8_t(type >> 8), 0, 0, 7, 0, 0, 0, 9, 0, 0, 0};
  instances_.Deliver(*e, {2'000'000'000, 7, 7, 0}, record);
  std::string trace = Read("trace");
  EXPECT_NE(trace.find("entries-in-buffer/entries-written: 1/1"), std::string::npos);
  EXPECT_NE(trace.find("app-7       [000] .....     2.000000: test: count=0x9 (9)\n"), std::string::npos);
  ASSERT_EQ(tree_.Write("trace", "", false, kConsumer), 0);
  EXPECT_EQ(Read("trace").find("app-7"), std::string::npos);
}

TEST_F(TracefsTreeTest, TracingOffStopsRecording) {
  ASSERT_EQ(tree_.Write("dynamic_events", "u:test", true, kRoot), 0);
  Event* e = registry_.FindByTracepoint("user_events", "test");
  instances_.SetEnabled(instances_.top(), e, true);
  ASSERT_EQ(tree_.Write("tracing_on", "0", false, kConsumer), 0);
  instances_.Deliver(*e, {}, std::vector<uint8_t>(8));
  EXPECT_EQ(instances_.top().buffer().entries(), 0u);
  EXPECT_EQ(Read("tracing_on"), "0\n");
}

TEST_F(TracefsTreeTest, PerCpuStatsCountWhereEventsWent) {
  ASSERT_EQ(tree_.Write("dynamic_events", "u:test u32 count", true, kRoot), 0);
  Event* e = registry_.FindByTracepoint("user_events", "test");
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(tree_.Write("events/user_events/test/enable", "1", false, kConsumer), 0);
  instances_.NoteLost(4);
  instances_.NoteLost(3, /*disk_behind=*/true);
  instances_.Deliver(*e, {2'500'000'000, 1, 1, 0}, std::vector<uint8_t>(8));
  instances_.Deliver(*e, {3'000'000'000, 1, 1, 0}, std::vector<uint8_t>(8));
  TraceEntry entry;
  std::vector<uint8_t> storage;
  ASSERT_TRUE(instances_.top().buffer().Pop(&entry, &storage));
  std::string stats = Read("per_cpu/cpu0/stats");
  EXPECT_TRUE(stats.starts_with("entries: 1\noverrun: 0\ncommit overrun: 0\nbytes: 48\n"
                                "oldest event ts:     3.000000\nnow ts: "))
      << stats;
  EXPECT_TRUE(
      stats.ends_with("\ndropped events: 0\nread events: 1\nlost in producer rings: 7\n"
                      "lost in producer rings while the disk was behind: 3\n"))
      << stats;
  EXPECT_EQ(tree_.Write("per_cpu/cpu0/stats", "0", false, kConsumer), EACCES);
  EXPECT_FALSE(tree_.Read("per_cpu/cpu1/stats", kConsumer).ok());
  auto listing = tree_.List("per_cpu", kConsumer);
  ASSERT_TRUE(listing.ok());
  ASSERT_EQ(listing->size(), 1u);
  EXPECT_EQ((*listing)[0].name, "cpu0");
}

// A probe instance's events go to the USDT probe (service/event_probe.h),
// not to its buffer; the instances that trace them as usual still get them.
TEST_F(TracefsTreeTest, UsdtProbeInstanceDoesNotBuffer) {
  ASSERT_EQ(tree_.Write("dynamic_events", "u:test u32 count", true, kRoot), 0);
  Event* e = registry_.FindByTracepoint("user_events", "test");
  ASSERT_EQ(tree_.Mkdir("instances/bpf", 0, kConsumer), 0);
  EXPECT_EQ(Read("instances/bpf/usdt_probe"), "0\n");
  ASSERT_EQ(tree_.Write("instances/bpf/usdt_probe", "1\n", false, kConsumer), 0);
  EXPECT_EQ(Read("instances/bpf/usdt_probe"), "1\n");
  EXPECT_EQ(Read("usdt_probe"), "0\n");
  EXPECT_EQ(tree_.Write("instances/bpf/usdt_probe", "2", false, kConsumer), EINVAL);
  EXPECT_EQ(tree_.Write("instances/bpf/usdt_probe", "0", false, kProducer), EACCES);
  ASSERT_EQ(tree_.Write("instances/bpf/events/user_events/test/enable", "1", false, kConsumer), 0);
  ASSERT_EQ(tree_.Write("events/user_events/test/enable", "1", false, kConsumer), 0);
  // Raised as a tracer would: the probe fires (a no-op with nobody attached).
  udiag_event_semaphore = 1;
  instances_.Deliver(*e, {1000, 1, 1, 0}, std::vector<uint8_t>(12));
  udiag_event_semaphore = 0;
  EXPECT_EQ(instances_.Find("bpf")->buffer().entries(), 0u);
  EXPECT_EQ(instances_.top().buffer().entries(), 1u);
  ASSERT_EQ(tree_.Write("instances/bpf/usdt_probe", "0", false, kConsumer), 0);
  instances_.Deliver(*e, {2000, 1, 1, 0}, std::vector<uint8_t>(12));
  EXPECT_EQ(instances_.Find("bpf")->buffer().entries(), 1u);
}

TEST_F(TracefsTreeTest, BufferSize) {
  ASSERT_EQ(tree_.Write("buffer_size_kb", "2048\n", false, kConsumer), 0);
  EXPECT_EQ(Read("buffer_size_kb"), "2048\n");
  EXPECT_EQ(tree_.Write("buffer_size_kb", "0", false, kConsumer), EINVAL);
  EXPECT_EQ(tree_.Write("buffer_size_kb", "abc", false, kConsumer), EINVAL);
}

TEST_F(TracefsTreeTest, BlockingTimeoutPerInstance) {
  EXPECT_EQ(Read("blocking_timeout_ms"), "0\n");
  ASSERT_EQ(tree_.Mkdir("instances/x", 0, kConsumer), 0);
  ASSERT_EQ(tree_.Write("instances/x/blocking_timeout_ms", "250\n", false, kConsumer), 0);
  EXPECT_EQ(Read("instances/x/blocking_timeout_ms"), "250\n");
  EXPECT_EQ(Read("blocking_timeout_ms"), "0\n");
  EXPECT_EQ(instances_.Find("x")->blocking_timeout_ms(), 250u);
  EXPECT_EQ(tree_.Write("instances/x/blocking_timeout_ms", "3600001", false, kConsumer), EINVAL);
  EXPECT_EQ(tree_.Write("instances/x/blocking_timeout_ms", "-1", false, kConsumer), EINVAL);
  EXPECT_EQ(tree_.Write("instances/x/blocking_timeout_ms", "5", false, kProducer), EACCES);
  EXPECT_EQ(Read("instances/x/blocking_timeout_ms"), "250\n");
  auto listing = tree_.List("instances/x", kConsumer);
  ASSERT_TRUE(listing.ok());
  EXPECT_TRUE(std::any_of(listing->begin(), listing->end(),
                          [](const DirEntry& e) { return e.name == "blocking_timeout_ms" && !e.is_directory; }));
}

}  // namespace
}  // namespace udiag::service

namespace udiag::service {
namespace {

TEST_F(TracefsTreeTest, InstancesHaveTheirOwnFilesAndErrnos) {
  ASSERT_EQ(tree_.Write("dynamic_events", "u:test u32 count", true, kRoot), 0);
  EXPECT_EQ(tree_.Mkdir("instances/x", 0, kConsumer), 0);
  EXPECT_EQ(tree_.Mkdir("instances/x", 0, kConsumer), EEXIST);
  EXPECT_EQ(tree_.Mkdir("instances/a\tb", 0, kConsumer), EINVAL);
  EXPECT_EQ(tree_.Mkdir("instances/y", 0, kProducer), EACCES);
  EXPECT_EQ(tree_.Mkdir("x", 0, kConsumer), EPERM);
  EXPECT_EQ(Read("instances/x/tracing_on"), "1\n");
  EXPECT_EQ(Read("instances/x/buffer_size_kb"), "4096\n");
  EXPECT_EQ(tree_.Read("instances/x/dynamic_events", kRoot).error(), ENOENT);
  EXPECT_EQ(tree_.Read("instances/nope/trace", kRoot).error(), ENOENT);

  ASSERT_EQ(tree_.Write("instances/x/events/user_events/test/enable", "1", false, kConsumer), 0);
  EXPECT_EQ(Read("instances/x/set_event"), "user_events:test\n");
  EXPECT_EQ(Read("set_event"), "");
  EXPECT_EQ(Read("user_events_status"), "test # Used by ftrace\n\nActive: 1\nBusy: 1\n");
  ASSERT_EQ(tree_.Write("events/user_events/test/enable", "1", false, kConsumer), 0);

  Instance* x = instances_.Find("x");
  ASSERT_NE(x, nullptr);
  x->AddReader();
  EXPECT_EQ(tree_.Rmdir("instances/x", kConsumer).error(), EBUSY);
  x->RemoveReader();
  auto removed = tree_.Rmdir("instances/x", kConsumer);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, "x");
  EXPECT_EQ(tree_.Rmdir("instances/x", kConsumer).error(), ENOENT);
  // The top instance still enables it; once it stops, nothing holds the event.
  EXPECT_EQ(Read("user_events_status"), "test # Used by ftrace\n\nActive: 1\nBusy: 1\n");
  ASSERT_EQ(tree_.Write("events/user_events/test/enable", "0", false, kConsumer), 0);
  EXPECT_EQ(Read("user_events_status"), "test\n\nActive: 1\nBusy: 0\n");
}

TEST_F(TracefsTreeTest, InstancesAreBounded) {
  for (size_t i = 0; i < kMaxInstances; ++i) ASSERT_EQ(tree_.Mkdir("instances/i" + std::to_string(i), 0, kConsumer), 0);
  EXPECT_EQ(tree_.Mkdir("instances/one-more", 0, kConsumer), ENOSPC);
  ASSERT_TRUE(tree_.Rmdir("instances/i0", kConsumer).ok());
  EXPECT_EQ(tree_.Mkdir("instances/one-more", 0, kConsumer), 0);
}

TEST_F(TracefsTreeTest, RecordSessionsShowAfterTheKernelKinds) {
  ASSERT_EQ(tree_.Write("dynamic_events", "u:test u32 count", true, kRoot), 0);
  ASSERT_EQ(tree_.Mkdir("instances/rec", /*owner=*/7, kConsumer), 0);
  ASSERT_EQ(tree_.Write("instances/rec/events/enable", "1", false, kConsumer), 0);
  EXPECT_EQ(Read("user_events_status"), "test # Used by ftrace record\n\nActive: 1\nBusy: 1\n");
}

TEST_F(TracefsTreeTest, OverwriteAndSnapshot) {
  ASSERT_EQ(tree_.Write("dynamic_events", "u:test u32 count", true, kRoot), 0);
  ASSERT_EQ(tree_.Mkdir("instances/f", 0, kConsumer), 0);
  EXPECT_EQ(Read("instances/f/options/overwrite"), "0\n");
  ASSERT_EQ(tree_.Write("instances/f/options/overwrite", "1", false, kConsumer), 0);
  EXPECT_EQ(Read("instances/f/options/overwrite"), "1\n");
  EXPECT_EQ(tree_.Write("instances/f/options/overwrite", "x", false, kConsumer), EINVAL);
  EXPECT_NE(Read("instances/f/snapshot").find("Snapshot is freed"), std::string::npos);

  Event* event = registry_.FindByTracepoint("user_events", "test");
  ASSERT_NE(event, nullptr);
  ASSERT_EQ(tree_.Write("instances/f/events/enable", "1", false, kConsumer), 0);
  std::vector<uint8_t> record(12, 0);
  uint16_t type = event->id;
  std::memcpy(record.data(), &type, sizeof(type));
  instances_.Deliver(*event, {1000, 1, 1, 0}, record);
  ASSERT_EQ(tree_.Write("instances/f/snapshot", "1", false, kConsumer), 0);
  instances_.Deliver(*event, {2000, 1, 1, 0}, record);
  std::string snapshot = Read("instances/f/snapshot");
  EXPECT_NE(snapshot.find("entries-in-buffer/entries-written: 1/1"), std::string::npos) << snapshot;
  EXPECT_NE(Read("instances/f/trace").find("entries-in-buffer/entries-written: 2/2"), std::string::npos);
  ASSERT_EQ(tree_.Write("instances/f/snapshot", "2", false, kConsumer), 0);
  EXPECT_NE(Read("instances/f/snapshot").find("entries-in-buffer/entries-written: 0/0"), std::string::npos);
  ASSERT_EQ(tree_.Write("instances/f/snapshot", "0", false, kConsumer), 0);
  EXPECT_NE(Read("instances/f/snapshot").find("Snapshot is freed"), std::string::npos);
}

}  // namespace
}  // namespace udiag::service
