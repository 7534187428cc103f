#include "service/event_registry.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "service/status_page.h"
#include "service/test_observer.h"

namespace udiag::service {
namespace {

class EventRegistryTest : public ::testing::Test {
 protected:
  EventRegistryTest()
      : page_(std::move(StatusPage::Create(EventRegistry::kFirstId, 64)).value()), registry_(&page_, &observer_) {}

  Event* Create(std::string_view command, bool multi = false, bool persist = false) {
    auto e = registry_.FindOrCreate(command, multi, persist);
    EXPECT_TRUE(e.ok()) << command << ": " << e.error();
    return e.ok() ? *e : nullptr;
  }

  StatusPage page_;
  RecordingObserver observer_;
  EventRegistry registry_;
};

TEST_F(EventRegistryTest, SameCommandFindsTheSameEvent) {
  Event* a = Create("test u32 a; u32 b");
  Event* b = Create("test u32 a;u32 b");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->refs, 2);
  EXPECT_EQ(observer_.created.size(), 1u);
}

TEST_F(EventRegistryTest, SameNameOtherFieldsIsAddressInUse) {
  Create("test u32 a");
  auto e = registry_.FindOrCreate("test u64 a", false, false);
  EXPECT_EQ(e.error(), EADDRINUSE);
  // The conflict is found before the field text is parsed.
  EXPECT_EQ(registry_.FindOrCreate("test bogus", false, false).error(), EADDRINUSE);
}

TEST_F(EventRegistryTest, ParseErrorsAndTextFlags) {
  EXPECT_EQ(registry_.FindOrCreate("test:FLAG u32 a", false, false).error(), EINVAL);
  EXPECT_EQ(registry_.FindOrCreate("test long a", false, false).error(), EINVAL);
}

TEST_F(EventRegistryTest, MultiFormatVersionsGetHexSuffixes) {
  Event* first = Create("test u32 a", true);
  Event* second = Create("test u64 a", true);
  Event* again = Create("test u64 a", true);
  Event* single = Create("test u8 x");
  EXPECT_EQ(first->tp_name, "test.0");
  EXPECT_EQ(second->tp_name, "test.1");
  EXPECT_EQ(again, second);
  EXPECT_EQ(single->tp_name, "test");
  EXPECT_STREQ(first->system(), "user_events_multi");
}

TEST_F(EventRegistryTest, LastReferenceDeletesOnCollect) {
  Event* e = Create("test u32 a");
  uint32_t id = e->id;
  registry_.Put(e);
  EXPECT_NE(registry_.FindById(id), nullptr);  // asynchronous, as the kernel's
  registry_.CollectGarbage();
  EXPECT_EQ(registry_.FindById(id), nullptr);
  EXPECT_EQ(observer_.destroyed, std::vector<uint32_t>{id});
}

TEST_F(EventRegistryTest, ReRegistrationBeforeCollectResurrects) {
  Event* e = Create("test u32 a");
  registry_.Put(e);
  Event* again = Create("test u32 a");
  registry_.CollectGarbage();
  EXPECT_EQ(again, e);
  EXPECT_EQ(registry_.FindById(e->id), e);
}

TEST_F(EventRegistryTest, DeleteRules) {
  Event* busy = Create("busy u32 a");
  EXPECT_EQ(registry_.DeleteByName("busy", true), EBUSY);
  EXPECT_EQ(registry_.DeleteByName("nothing", true), ENOENT);
  Event* kept = Create("kept u32 a", false, /*persist=*/true);
  registry_.Put(kept);
  registry_.CollectGarbage();
  EXPECT_EQ(registry_.FindById(kept->id), kept);
  EXPECT_EQ(registry_.DeleteByName("kept", false), EPERM);
  EXPECT_EQ(registry_.DeleteByName("kept", true), 0);
  EXPECT_EQ(registry_.size(), 1u);
  (void)busy;
}

TEST_F(EventRegistryTest, DeleteMatchingNeedsTheFields) {
  Event* e = Create("test u32 a", false, true);
  registry_.Put(e);
  EXPECT_EQ(registry_.DeleteMatching("", "test", "", true), ENOENT);  // bare name: field-less only
  EXPECT_EQ(registry_.DeleteMatching("other", "test", "u32 a", true), ENOENT);
  EXPECT_EQ(registry_.DeleteMatching("user_events_multi", "test", "u32 a", true), 0);  // either system
}

TEST_F(EventRegistryTest, DeleteAllIsAllOrNothing) {
  Event* p = Create("p u32 a", false, true);
  registry_.Put(p);
  Create("busy u32 a");
  EXPECT_EQ(registry_.DeleteAll(true), EBUSY);
  EXPECT_EQ(registry_.size(), 2u);
}

TEST_F(EventRegistryTest, IdsFitCommonTypeAndSkipReservedOnes) {
  static_assert(EventRegistry::kFirstId + EventRegistry::kDefaultMaxEvents - 1 == UINT16_MAX);
  registry_.ReserveIds({EventRegistry::kFirstId, EventRegistry::kFirstId + 2, 5, UINT32_MAX});
  EXPECT_EQ(Create("a")->id, EventRegistry::kFirstId + 1);
  EXPECT_EQ(Create("b")->id, EventRegistry::kFirstId + 3);
}

TEST_F(EventRegistryTest, LimitGivesEmfile) {
  registry_.set_max_events(1);
  Create("one");
  EXPECT_EQ(registry_.FindOrCreate("two", false, false).error(), EMFILE);
  // Re-registering an existing event does not count.
  EXPECT_TRUE(registry_.FindOrCreate("one", false, false).ok());
}

TEST_F(EventRegistryTest, StatusBitsReachThePageAndTheObserver) {
  Event* e = Create("test");
  registry_.SetStatusBits(e, kStatusFtrace, true);
  EXPECT_EQ(page_.Get(e->id), kStatusFtrace);
  registry_.SetStatusBits(e, kStatusFtrace, true);  // no change, no notice
  registry_.SetStatusBits(e, kStatusFtrace, false);
  EXPECT_EQ(page_.Get(e->id), 0);
  ASSERT_EQ(observer_.status_changes.size(), 2u);
}

TEST_F(EventRegistryTest, IdsAreNotReusedRightAway) {
  Event* e = Create("a");
  uint32_t first = e->id;
  registry_.Put(e);
  registry_.CollectGarbage();
  EXPECT_NE(Create("b")->id, first);
}

}  // namespace
}  // namespace udiag::service
