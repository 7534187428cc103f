// The C++ layer of include/udiag/mmio.hpp: functors called, RAII unregistration.
#include "udiag/mmio.hpp"

#include <cerrno>
#include <cstring>

#include <gtest/gtest.h>

#include "mmio/probe_test_support.h"

namespace udiag::mmio::testing {
namespace {

TEST(MmioProbeTest, CallsFunctorsAndUnregistersOnDestruction) {
  SharedPages pages(1);
  auto* word = reinterpret_cast<volatile uint32_t*>(pages.base() + 8);
  int pre_calls = 0, post_calls = 0;
  uint32_t seen = 0;
  {
    udiag::mmio_probe probe(
        word, sizeof(*word),
        [&](const udiag_mmio_access& a) {
          ++post_calls;
          if (a.value_valid) memcpy(&seen, a.value, sizeof(seen));
        },
        [&](const udiag_mmio_access& a, void* ucontext) { pre_calls += a.dir == UDIAG_MMIO_WRITE && ucontext; });
    ASSERT_EQ(probe.error(), 0);
    *word = 1234;
    udiag::mmio_probe overlapping(word, 1, [](const udiag_mmio_access&) {});
    EXPECT_EQ(overlapping.error(), EEXIST);
  }
  *word = 5;  // unregistered: not seen
  EXPECT_EQ(pre_calls, 1);
  EXPECT_EQ(post_calls, 1);
  EXPECT_EQ(seen, 1234u);
}

TEST(MmioProbeTest, PostOnlyProbeRegistersNoPreHandler) {
  SharedPages pages(1);
  udiag::mmio_probe probe(pages.base(), 4, [](const udiag_mmio_access&) {});
  ASSERT_EQ(probe.error(), 0);
  EXPECT_EQ(probe.c_probe().pre, nullptr);
  EXPECT_NE(probe.c_probe().post, nullptr);
}

}  // namespace
}  // namespace udiag::mmio::testing
