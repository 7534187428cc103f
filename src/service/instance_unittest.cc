#include "service/instance.h"

#include <gtest/gtest.h>

#include <vector>

#include "service/status_page.h"
#include "service/test_observer.h"

namespace udiag::service {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr size_t kRecordBytes = 1000;

void Fill(Instance& instance) {
  const std::vector<uint8_t> record(kRecordBytes, 1);
  while (instance.buffer().Append({}, record)) {
  }
}

// A registry and an instance set with one named instance, "rec".
class InstanceTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(instances.Create("rec", 0), 0); }
  StatusPage page = std::move(StatusPage::Create(EventRegistry::kFirstId, 64)).value();
  RecordingObserver observer;
  EventRegistry registry{&page, &observer};
  InstanceSet instances{&registry};
};

TEST_F(InstanceTest, HoldsBackOnlyWhenAskedAndWhileReadInTime) {
  Instance& rec = *instances.Find("rec");
  rec.buffer().set_capacity(128 * 1024);
  EXPECT_FALSE(rec.HoldsBack(1 * kMs, kRecordBytes)) << "blocking is off by default";
  rec.set_blocking_timeout_ms(100);
  EXPECT_FALSE(rec.HoldsBack(1 * kMs, kRecordBytes)) << "enables nothing";
  auto event = registry.FindOrCreate("rec_test u32 n", false, false);
  ASSERT_TRUE(event.ok());
  instances.SetEnabled(rec, *event, true);
  EXPECT_TRUE(rec.HoldsBack(1 * kMs, kRecordBytes));

  // Full and unread: held back for the timeout, then no longer.
  Fill(rec);
  EXPECT_TRUE(rec.HoldsBack(50 * kMs, kRecordBytes));
  EXPECT_FALSE(rec.HoldsBack(101 * kMs, kRecordBytes));
  // A read is progress: held back again, for another timeout.
  TraceEntry entry;
  std::vector<uint8_t> storage;
  ASSERT_TRUE(rec.buffer().Pop(&entry, &storage));
  EXPECT_TRUE(rec.HoldsBack(150 * kMs, kRecordBytes));
  Fill(rec);
  EXPECT_TRUE(rec.HoldsBack(249 * kMs, kRecordBytes));
  EXPECT_FALSE(rec.HoldsBack(251 * kMs, kRecordBytes));

  // A flight recorder or a stopped instance never holds back.
  rec.buffer().Clear();
  EXPECT_TRUE(rec.HoldsBack(300 * kMs, kRecordBytes));
  rec.buffer().set_overwrite(true);
  EXPECT_FALSE(rec.HoldsBack(300 * kMs, kRecordBytes));
  rec.buffer().set_overwrite(false);
  rec.set_tracing_on(false);
  EXPECT_FALSE(rec.HoldsBack(300 * kMs, kRecordBytes));
  instances.SetEnabled(rec, *event, false);
  registry.Put(*event);
}

// What lets the drain loop leave the rings alone for a full recorder, or
// skip delivery for a run in its page: nobody else takes the event in.
TEST_F(InstanceTest, TheOnlyInstanceTakingEventsInAndTheDirectTaker) {
  Instance& rec = *instances.Find("rec");
  auto event = registry.FindOrCreate("only_test u32 n", false, false);
  ASSERT_TRUE(event.ok());
  EXPECT_TRUE(instances.OnlyOneTakesEventsIn(rec)) << "nobody takes anything in";
  instances.SetEnabled(rec, *event, true);
  EXPECT_TRUE(instances.OnlyOneTakesEventsIn(rec));
  EXPECT_EQ(instances.DirectTakerOf(**event), nullptr) << "no recorder takes its records";
  instances.SetEnabled(instances.top(), *event, true);
  EXPECT_FALSE(instances.OnlyOneTakesEventsIn(rec)) << "the top instance takes it in too";
  EXPECT_FALSE(instances.OnlyOneTakesEventsIn(instances.top()));
  instances.SetEnabled(instances.top(), *event, false);
  EXPECT_TRUE(instances.OnlyOneTakesEventsIn(rec));
  ASSERT_EQ(instances.Create("other", 0), 0);
  instances.SetSoftMode(*instances.Find("other"), *event, true);
  EXPECT_FALSE(instances.OnlyOneTakesEventsIn(rec)) << "a trigger's soft mode takes records in";
  EXPECT_TRUE(instances.Find("other")->HasSoftMode());
  instances.SetSoftMode(*instances.Find("other"), *event, false);
  EXPECT_TRUE(instances.OnlyOneTakesEventsIn(rec));
  instances.SetEnabled(rec, *event, false);
  registry.Put(*event);
}

// A recorder that takes records and keeps none: what PerCpuPageKeeper
// looks for is only that there is one.
class DiscardingTaker : public RecordTaker {
 public:
  void Take(const Event&, const EntryMeta&, uint64_t, std::span<const uint8_t>) override {}
  record::tracedat::PageEncoder* StartRun(const Event&, const EntryMeta&) override { return nullptr; }
  void EndRun(uint16_t, uint32_t) override {}
  void TakePage(const EntryMeta&, CheckedPage&, uint64_t) override {}
};

// When the drain loop may put records in time order per cpu only: all of
// them go to one recorder's per-cpu pages, and nothing acts on their order
// across cpus.
TEST_F(InstanceTest, PerCpuPageKeeperIsOnlyALoneRecorderWithoutTriggers) {
  Instance& rec = *instances.Find("rec");
  auto event = registry.FindOrCreate("order_test u32 n", false, false);
  ASSERT_TRUE(event.ok());
  instances.SetEnabled(rec, *event, true);
  EXPECT_EQ(instances.PerCpuPageKeeper(), nullptr) << "a trace_pipe reader's buffer needs one time order";
  DiscardingTaker taker;
  rec.set_taker(&taker);
  EXPECT_EQ(instances.PerCpuPageKeeper(), &rec);

  ASSERT_EQ(rec.triggers().Write(instances, rec, **event, "traceoff", true, registry), 0);
  EXPECT_EQ(instances.PerCpuPageKeeper(), nullptr) << "a trigger acts on what came before it";
  ASSERT_EQ(rec.triggers().Write(instances, rec, **event, "!traceoff", true, registry), 0);
  EXPECT_EQ(instances.PerCpuPageKeeper(), &rec);

  rec.buffer().set_overwrite(true);
  EXPECT_EQ(instances.PerCpuPageKeeper(), nullptr) << "a flight recorder's buffer drops the oldest";
  rec.buffer().set_overwrite(false);
  rec.set_blocking_timeout_ms(100);
  EXPECT_EQ(instances.PerCpuPageKeeper(), &rec) << "--block: the drain takes what the recorder has room for";
  rec.set_blocking_timeout_ms(0);

  instances.SetEnabled(instances.top(), *event, true);
  EXPECT_EQ(instances.PerCpuPageKeeper(), nullptr) << "the top instance takes records in too";
  instances.SetEnabled(instances.top(), *event, false);
  EXPECT_EQ(instances.PerCpuPageKeeper(), &rec);

  rec.set_taker(nullptr);
  instances.SetEnabled(rec, *event, false);
  registry.Put(*event);
}

}  // namespace
}  // namespace udiag::service
