// LOCK and XCHG forms stay atomic under emulation: one thread's emulated read-modify-writes on
// the probed view race with another thread's native ones on the alias, and no update is lost.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "mmio/emulator/emulator_test_harness.h"

namespace udiag::mmio::testing {
namespace {

constexpr int kIterations = 20000;

TEST(EmulatorAtomicityTest, LockedAddLosesNoUpdate) {
  Harness harness;
  memset(harness.alias(), 0, 16);
  uint8_t* probed = harness.view() + 8;
  uint8_t* plain = harness.alias() + 8;
  FaultRecord record;
  harness.Arm(&record);
  std::thread native([plain] {
    for (int i = 0; i < kIterations; ++i) asm volatile("lock addq $1, (%0)" : : "r"(plain) : "memory");
  });
  for (int i = 0; i < kIterations; ++i) asm volatile("lock addq $1, (%0)" : : "r"(probed) : "memory");
  native.join();
  harness.Disarm();
  uint64_t total;
  memcpy(&total, plain, sizeof(total));
  EXPECT_EQ(total, 2u * kIterations);
  EXPECT_EQ(record.faults, kIterations);
  EXPECT_EQ(record.failures, 0);
}

TEST(EmulatorAtomicityTest, XchgHandsOverEveryToken) {
  // Both threads swap their own token into the word; every token taken out is unique, so the
  // sum of everything that came out plus what is left equals the sum that went in.
  Harness harness;
  memset(harness.alias(), 0, 16);
  uint8_t* probed = harness.view();
  uint8_t* plain = harness.alias();
  FaultRecord record;
  harness.Arm(&record);
  uint64_t native_sum = 0, emulated_sum = 0;
  std::thread native([plain, &native_sum] {
    for (uint64_t i = 1; i <= kIterations; ++i) {
      uint64_t token = i * 2;
      asm volatile("xchg %0, (%1)" : "+r"(token) : "r"(plain) : "memory");
      native_sum += token;
    }
  });
  for (uint64_t i = 1; i <= kIterations; ++i) {
    uint64_t token = i * 2 + 1;
    asm volatile("xchg %0, (%1)" : "+r"(token) : "r"(probed) : "memory");
    emulated_sum += token;
  }
  native.join();
  harness.Disarm();
  uint64_t left;
  memcpy(&left, plain, sizeof(left));
  const uint64_t n = kIterations;
  const uint64_t put_in = 2 * (n * (n + 1) / 2) + 2 * (n * (n + 1) / 2) + n;
  EXPECT_EQ(native_sum + emulated_sum + left, put_in);
  EXPECT_EQ(record.faults, kIterations);
  EXPECT_EQ(record.failures, 0);
}

}  // namespace
}  // namespace udiag::mmio::testing
