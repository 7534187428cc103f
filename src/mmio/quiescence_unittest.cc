#include "mmio/quiescence.h"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

namespace udiag::mmio {
namespace {

TEST(QuiescenceTest, SynchronizeWaitsForOpenSections) {
  Quiescence q;
  const unsigned outer = q.Enter();
  const unsigned nested = q.Enter();
  std::atomic<bool> synchronized{false};
  std::thread writer([&] {
    q.Synchronize();
    synchronized = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  q.Leave(nested);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(synchronized.load());
  q.Leave(outer);
  writer.join();
  EXPECT_TRUE(synchronized.load());
}

TEST(QuiescenceTest, SectionsStartedAfterSynchronizeDoNotDelayIt) {
  Quiescence q;
  q.Synchronize();
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop.load()) q.Leave(q.Enter());
  });
  const unsigned held = q.Enter();
  std::thread writer([&] { q.Synchronize(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  q.Leave(held);
  writer.join();  // returns although the reader keeps entering
  stop = true;
  reader.join();
}

}  // namespace
}  // namespace udiag::mmio
