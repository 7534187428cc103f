// The `filter` files through the tracefs tree, and their effect on delivery.
#include "service/event_filters.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "service/status_page.h"
#include "service/test_observer.h"
#include "service/tracefs_tree.h"

namespace udiag::service {
namespace {

const Caller kRoot{true, true, true};

class EventFiltersTest : public ::testing::Test {
 protected:
  EventFiltersTest()
      : page_(std::move(StatusPage::Create(EventRegistry::kFirstId, 64)).value()),
        registry_(&page_, &observer_),
        instances_(&registry_),
        tree_(&registry_, &instances_, [](uint32_t tid) { return std::string(tid == 7 ? "bash" : "app"); }) {
    EXPECT_EQ(Write("dynamic_events", "u:req u32 status; __rel_loc char[] path\nu:tick u32 n"), 0);
    req_ = registry_.FindByTracepoint("user_events", "req");
    tick_ = registry_.FindByTracepoint("user_events", "tick");
  }

  int Write(std::string_view path, std::string_view text) { return tree_.Write(path, text, true, kRoot); }
  std::string Read(std::string_view path) {
    auto r = tree_.Read(path, kRoot);
    EXPECT_TRUE(r.ok()) << path << ": " << r.error();
    return r.ok() ? *r : "";
  }

  // A req record: common header (pid = tid), status, then the path.
  std::vector<uint8_t> Req(uint32_t status, const char* path, uint32_t tid = 1) {
    std::vector<uint8_t> r(16);
    uint16_t type = static_cast<uint16_t>(req_->id);
    std::memcpy(r.data(), &type, 2);
    std::memcpy(r.data() + 4, &tid, 4);
    std::memcpy(r.data() + 8, &status, 4);
    uint32_t loc = static_cast<uint32_t>(std::strlen(path) + 1) << 16;  // data right after the loc word
    std::memcpy(r.data() + 12, &loc, 4);
    r.insert(r.end(), path, path + std::strlen(path) + 1);
    return r;
  }
  // Delivers a req record; returns how many entries `instance` then holds.
  size_t Deliver(Instance& instance, uint32_t status, const char* path, uint32_t tid = 1) {
    std::vector<uint8_t> record = Req(status, path, tid);
    instances_.Deliver(*req_, EntryMeta{0, tid, tid, 0}, record);
    return instance.buffer().entries();
  }

  StatusPage page_;
  RecordingObserver observer_;
  EventRegistry registry_;
  InstanceSet instances_;
  TracefsTree tree_;
  Event* req_ = nullptr;
  Event* tick_ = nullptr;
};

TEST_F(EventFiltersTest, UnsetReadsNoneAndZeroClears) {
  EXPECT_EQ(Read("events/user_events/req/filter"), "none\n");
  ASSERT_EQ(Write("events/user_events/req/filter", "status >= 500\n"), 0);
  EXPECT_EQ(Read("events/user_events/req/filter"), "status >= 500\n");
  ASSERT_EQ(Write("events/user_events/req/filter", " 0 \n"), 0);
  EXPECT_EQ(Read("events/user_events/req/filter"), "none\n");
}

TEST_F(EventFiltersTest, FilterDropsEventsBeforeTheBuffer) {
  ASSERT_EQ(Write("events/user_events/req/enable", "1"), 0);
  ASSERT_EQ(Write("events/user_events/req/filter", "status >= 500 && path ~ \"/api/*\""), 0);
  Instance& top = instances_.top();
  EXPECT_EQ(Deliver(top, 200, "/api/x"), 0u);
  EXPECT_EQ(Deliver(top, 503, "/static/x"), 0u);
  EXPECT_EQ(Deliver(top, 503, "/api/x"), 1u);
  // Dropped events are not losses: the buffer never saw them.
  EXPECT_EQ(top.buffer().written(), 1u);
  EXPECT_EQ(top.buffer().lost_total(), 0u);
  ASSERT_EQ(Write("events/user_events/req/filter", "0"), 0);
  EXPECT_EQ(Deliver(top, 200, "/"), 2u);
}

TEST_F(EventFiltersTest, CommComesFromTheLookup) {
  ASSERT_EQ(Write("events/user_events/req/enable", "1"), 0);
  ASSERT_EQ(Write("events/user_events/req/filter", "COMM == \"bash\""), 0);
  EXPECT_EQ(Deliver(instances_.top(), 1, "/", 1), 0u);
  EXPECT_EQ(Deliver(instances_.top(), 1, "/", 7), 1u);
}

TEST_F(EventFiltersTest, BadFilterShowsTheErrorAndLeavesTheEventUnfiltered) {
  ASSERT_EQ(Write("events/user_events/req/enable", "1"), 0);
  ASSERT_EQ(Write("events/user_events/req/filter", "status >= 500"), 0);
  EXPECT_EQ(Write("events/user_events/req/filter", "stat == 1\n"), EINVAL);
  EXPECT_EQ(Read("events/user_events/req/filter"), "stat == 1\n     ^\nparse_error: Field not found\n\n");
  EXPECT_EQ(Deliver(instances_.top(), 200, "/"), 1u);
  std::string log = Read("error_log");
  EXPECT_NE(log.find("] event filter parse error: error: Field not found\n  Command: stat == 1\n"
                     "                ^\n"),
            std::string::npos)
      << log;
  ASSERT_EQ(tree_.Write("error_log", "", false, kRoot), 0);  // `echo > error_log` clears
  EXPECT_EQ(Read("error_log"), "");
}

TEST_F(EventFiltersTest, KernelErrnoForStructuralErrors) {
  EXPECT_EQ(Write("events/user_events/req/filter", "(status == 1"), ENOENT);
  EXPECT_EQ(Write("events/user_events/req/filter", "status == 1)"), EPERM);
  EXPECT_EQ(Write("events/user_events/req/filter", "path == \"x"), ESRCH);
  EXPECT_EQ(Write("events/user_events/req/filter", std::string(4096, ' ')), EINVAL);
}

TEST_F(EventFiltersTest, SubsystemFilterAppliesWhereItParses) {
  ASSERT_EQ(Write("events/user_events/filter", "common_pid == 0"), 0);
  EXPECT_EQ(Read("events/user_events/req/filter"), "common_pid == 0\n");
  EXPECT_EQ(Read("events/user_events/tick/filter"), "common_pid == 0\n");
  EXPECT_EQ(Read("events/user_events/filter"), SystemFilterText());
  // Only req has `status`: tick shows the subsystem error and is unfiltered.
  ASSERT_EQ(Write("events/user_events/filter", "status == 0"), 0);
  EXPECT_EQ(Read("events/user_events/req/filter"), "status == 0\n");
  EXPECT_EQ(Read("events/user_events/tick/filter"),
            "status == 0\n^\nparse_error: Couldn't find or set field in one of a subsystem's events\n\n");
  EXPECT_NE(Read("error_log").find("error: Couldn't find or set field in one of a subsystem's events\n"
                                   "  Command: status == 0\n           ^\n"),
            std::string::npos);
  ASSERT_EQ(Write("events/user_events/filter", "0"), 0);
  EXPECT_EQ(Read("events/user_events/req/filter"), "none\n");
  EXPECT_EQ(Read("events/user_events/tick/filter"), "none\n");
}

TEST_F(EventFiltersTest, EachInstanceHasItsOwnFilters) {
  ASSERT_EQ(tree_.Mkdir("instances/a", 0, kRoot), 0);
  Instance& a = *instances_.Find("a");
  ASSERT_EQ(Write("events/user_events/req/enable", "1"), 0);
  ASSERT_EQ(Write("instances/a/events/user_events/req/enable", "1"), 0);
  ASSERT_EQ(Write("instances/a/events/user_events/req/filter", "status == 404"), 0);
  EXPECT_EQ(Read("events/user_events/req/filter"), "none\n");
  EXPECT_EQ(Read("instances/a/events/user_events/req/filter"), "status == 404\n");
  EXPECT_EQ(Deliver(a, 200, "/"), 0u);
  EXPECT_EQ(instances_.top().buffer().entries(), 1u);
  EXPECT_EQ(Deliver(a, 404, "/"), 1u);
  EXPECT_EQ(Write("instances/a/events/user_events/req/filter", "x"), EINVAL);
  EXPECT_NE(Read("instances/a/error_log"), "");
  EXPECT_EQ(Read("error_log"), "");
}

TEST_F(EventFiltersTest, AFilterDiesWithItsEvent) {
  ASSERT_EQ(Write("events/user_events/tick/filter", "n == 1"), 0);
  ASSERT_EQ(Write("dynamic_events", "-:tick u32 n"), 0);
  ASSERT_EQ(Write("dynamic_events", "u:tick2 u32 n"), 0);  // may reuse the id
  registry_.CollectGarbage();
  EXPECT_EQ(Read("events/user_events/tick2/filter"), "none\n");
}

TEST_F(EventFiltersTest, FilesAreListed) {
  auto system = tree_.List("events/user_events", kRoot);
  ASSERT_TRUE(system.ok());
  EXPECT_TRUE(std::any_of(system->begin(), system->end(), [](const DirEntry& e) { return e.name == "filter"; }));
  auto event = tree_.List("events/user_events/req", kRoot);
  ASSERT_TRUE(event.ok());
  EXPECT_TRUE(std::any_of(event->begin(), event->end(), [](const DirEntry& e) { return e.name == "filter"; }));
  auto top = tree_.List("", kRoot);
  ASSERT_TRUE(top.ok());
  EXPECT_TRUE(std::any_of(top->begin(), top->end(), [](const DirEntry& e) { return e.name == "error_log"; }));
}

}  // namespace
}  // namespace udiag::service
