#include "service/drain_arena.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace udiag::service {
namespace {

TEST(DrainArenaTest, KeepsItsContentsAcrossGrowth) {
  DrainArena arena;
  std::vector<size_t> offsets;
  // 3 MiB in records of 1000 bytes: several growths.
  for (size_t i = 0; i < 3000; ++i) {
    offsets.push_back(arena.size());
    std::memset(arena.Extend(1000), static_cast<int>(i % 251), 1000);
  }
  EXPECT_EQ(arena.size(), 3000u * 1000);
  EXPECT_GE(arena.capacity(), arena.size());
  for (size_t i = 0; i < offsets.size(); ++i) {
    const uint8_t* record = arena.data() + offsets[i];
    ASSERT_EQ(record[0], i % 251) << i;
    ASSERT_EQ(record[999], i % 251) << i;
  }
}

TEST(DrainArenaTest, GrowsInLargeStepsAndKeepsItsMemory) {
  DrainArena arena;
  arena.Extend(40);
  const size_t first = arena.capacity();
  EXPECT_GE(first, size_t{1} << 20);
  const uint8_t* memory = arena.data();
  for (int i = 1; i < 1000; ++i) arena.Extend(40);
  EXPECT_EQ(arena.data(), memory) << "no growth for small records";
  arena.Extend(first);
  EXPECT_GE(arena.capacity(), 2 * first);
  const size_t grown = arena.capacity();
  arena.Clear();
  EXPECT_EQ(arena.size(), 0u);
  arena.Extend(grown);
  EXPECT_EQ(arena.capacity(), grown) << "cleared memory is reused";
}

TEST(DrainArenaTest, TruncateDropsTheTail) {
  DrainArena arena;
  std::memset(arena.Extend(16), 1, 16);
  const size_t mark = arena.size();
  std::memset(arena.Extend(24), 2, 24);
  arena.Truncate(mark);
  EXPECT_EQ(arena.size(), 16u);
  uint8_t* next = arena.Extend(8);
  EXPECT_EQ(next, arena.data() + 16) << "the dropped bytes are handed out again";
  EXPECT_EQ(arena.data()[15], 1);
}

}  // namespace
}  // namespace udiag::service
