#include "service/user_quotas.h"

#include <gtest/gtest.h>

namespace udiag::service {
namespace {

UserLimits SmallLimits() {
  UserLimits limits;
  limits.fds = 2;
  limits.queued_bytes = 100;
  limits.events = 1;
  limits.ring_bytes = 1000;
  return limits;
}

TEST(UserQuotasTest, RefusesAnUnprivilegedUserOverHisLimitOnly) {
  UserQuotas quotas(SmallLimits());
  EXPECT_TRUE(quotas.TryCharge(1000, false, Resource::kFds, 1));
  EXPECT_TRUE(quotas.TryCharge(1000, false, Resource::kFds, 1));
  EXPECT_FALSE(quotas.TryCharge(1000, false, Resource::kFds, 1));
  EXPECT_EQ(quotas.Used(1000, Resource::kFds), 2u);
  // Another user, and a privileged one, are not affected.
  EXPECT_TRUE(quotas.TryCharge(1001, false, Resource::kFds, 1));
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(quotas.TryCharge(0, true, Resource::kFds, 1));
  quotas.Release(1000, Resource::kFds, 1);
  EXPECT_TRUE(quotas.TryCharge(1000, false, Resource::kFds, 1));
}

TEST(UserQuotasTest, AmountsCountWhole) {
  UserQuotas quotas(SmallLimits());
  EXPECT_TRUE(quotas.TryCharge(7, false, Resource::kRingBytes, 600));
  EXPECT_FALSE(quotas.TryCharge(7, false, Resource::kRingBytes, 600));
  EXPECT_TRUE(quotas.TryCharge(7, false, Resource::kRingBytes, 400));
  EXPECT_FALSE(quotas.HasRoom(7, false, Resource::kRingBytes));
}

TEST(UserQuotasTest, QueuedBytesAreChargedThenFoundOver) {
  UserQuotas quotas(SmallLimits());
  quotas.Charge(7, Resource::kQueuedBytes, 100);
  EXPECT_FALSE(quotas.Over(7, false, Resource::kQueuedBytes));
  quotas.Charge(7, Resource::kQueuedBytes, 1);
  EXPECT_TRUE(quotas.Over(7, false, Resource::kQueuedBytes));
  EXPECT_FALSE(quotas.Over(7, true, Resource::kQueuedBytes));
  quotas.Release(7, Resource::kQueuedBytes, 1000);  // never below zero
  EXPECT_EQ(quotas.Used(7, Resource::kQueuedBytes), 0u);
}

TEST(UserQuotasTest, FirstRefusalOncePerEpisode) {
  UserQuotas quotas(SmallLimits());
  ASSERT_TRUE(quotas.TryCharge(7, false, Resource::kEvents, 1));
  ASSERT_TRUE(quotas.TryCharge(7, false, Resource::kFds, 1));  // keeps the user's entry
  EXPECT_TRUE(quotas.FirstRefusal(7, Resource::kEvents));
  EXPECT_FALSE(quotas.FirstRefusal(7, Resource::kEvents));
  quotas.Release(7, Resource::kEvents, 1);  // back under the limit: a new episode
  EXPECT_TRUE(quotas.FirstRefusal(7, Resource::kEvents));
}

}  // namespace
}  // namespace udiag::service
