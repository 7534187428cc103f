#include "mmio/snapshot.h"

#include <gtest/gtest.h>

namespace udiag::mmio {
namespace {

class SnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Pages 0x10000 and 0x11000 aliased contiguously at 0x90000, 0x13000 without alias.
    for (uintptr_t page : {0x10000u, 0x11000u, 0x13000u}) {
      auto* state = new PageState();
      state->page = page;
      state->alias = page == 0x13000 ? nullptr : reinterpret_cast<uint8_t*>(0x90000 + (page - 0x10000));
      snap_.pages.push_back(state);
    }
    snap_.probes = {{0x10010, 0x10020, &a_}, {0x10020, 0x11008, &b_}};
  }
  void TearDown() override {
    for (PageState* state : snap_.pages) delete state;
  }
  Snapshot snap_;
  udiag_mmio_probe a_{}, b_{};
};

TEST_F(SnapshotTest, FindsPages) {
  EXPECT_EQ(snap_.FindPage(0x10fff)->page, 0x10000u);
  EXPECT_EQ(snap_.FindPage(0x11000)->page, 0x11000u);
  EXPECT_EQ(snap_.FindPage(0x12000), nullptr);
  EXPECT_EQ(snap_.FindPage(0xf000), nullptr);
}

TEST_F(SnapshotTest, FindsEveryOverlappingProbe) {
  udiag_mmio_probe* found[4];
  ASSERT_EQ(snap_.FindProbes(0x1001c, 8, found, 4), 2u);
  EXPECT_EQ(found[0], &a_);
  EXPECT_EQ(found[1], &b_);
  EXPECT_EQ(snap_.FindProbes(0x1000f, 1, found, 4), 0u);
  EXPECT_EQ(snap_.FindProbes(0x10010, 0, found, 4), 1u);  // width 0 = the byte at addr
  EXPECT_EQ(snap_.FindProbes(0x11008, 4, found, 4), 0u);
  EXPECT_EQ(snap_.FindProbes(0x1001c, 8, found, 1), 1u);
}

TEST_F(SnapshotTest, TranslatesThroughContiguousViewsOnly) {
  EXPECT_EQ(snap_.Translate(0x10ffc, 8), reinterpret_cast<uint8_t*>(0x90ffc));
  EXPECT_EQ(snap_.Translate(0x12010, 4), reinterpret_cast<uint8_t*>(0x12010));  // not probed: itself
  EXPECT_EQ(snap_.Translate(0x11ffc, 8), nullptr);  // alias, then plain memory
  EXPECT_EQ(snap_.Translate(0x13000, 4), nullptr);  // probed page without alias
}

}  // namespace
}  // namespace udiag::mmio
