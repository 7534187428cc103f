// GoogleTest assertion shared by the equivalence tests: native and emulated runs ended in the
// same machine state and memory.
#pragma once

#include <gtest/gtest.h>

#include <cstring>

#include "mmio/emulator/emulator_test_harness.h"

namespace udiag::mmio::testing {

inline void ExpectSameState(const Harness::Outcome& native, const Harness::Outcome& emulated) {
  for (int r = 0; r < 16; ++r) {
    EXPECT_EQ(native.machine.gpr[r], emulated.machine.gpr[r]) << "gpr " << r;
  }
  // Status flags and DF (the others cannot change in user mode).
  EXPECT_EQ(native.machine.rflags & 0xFD5, emulated.machine.rflags & 0xFD5);
  for (int v = 0; v < 32; ++v) {
    EXPECT_EQ(0, memcmp(native.machine.zmm[v], emulated.machine.zmm[v], 64)) << "zmm" << v;
  }
  for (int k = 0; k < 8; ++k) EXPECT_EQ(native.machine.k[k], emulated.machine.k[k]) << "k" << k;
  EXPECT_TRUE(native.memory == emulated.memory) << "memory differs";
}

}  // namespace udiag::mmio::testing
