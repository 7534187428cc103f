#include "mmio/memory_map.h"

#include <sys/mman.h>
#include <sys/sysmacros.h>

#include <gtest/gtest.h>

namespace udiag::mmio {
namespace {

TEST(MemoryMapTest, ParsesSharedFileLine) {
  Mapping m;
  ASSERT_TRUE(ParseMapsLine("7f00aa000000-7f00aa003000 rw-s 00002000 00:01 12345   /memfd:bar (deleted)\n", &m));
  EXPECT_EQ(m.start, 0x7f00aa000000u);
  EXPECT_EQ(m.end, 0x7f00aa003000u);
  EXPECT_EQ(m.prot, PROT_READ | PROT_WRITE);
  EXPECT_TRUE(m.shared);
  EXPECT_EQ(m.offset, 0x2000u);
  EXPECT_EQ(m.device, makedev(0, 1));
  EXPECT_EQ(m.inode, 12345u);
  EXPECT_EQ(m.path, "/memfd:bar (deleted)");
}

TEST(MemoryMapTest, ParsesAnonymousLineAndRejectsGarbage) {
  Mapping m;
  ASSERT_TRUE(ParseMapsLine("1000-2000 r-xp 00000000 00:00 0", &m));
  EXPECT_EQ(m.prot, PROT_READ | PROT_EXEC);
  EXPECT_FALSE(m.shared);
  EXPECT_EQ(m.path, "");
  EXPECT_FALSE(ParseMapsLine("not a maps line", &m));
}

TEST(MemoryMapTest, FindsOwnMappings) {
  void* mem = mmap(nullptr, 8192, PROT_READ, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto maps = ReadMemoryMap();
  ASSERT_TRUE(maps.ok());
  const Mapping* found = FindMapping(*maps, reinterpret_cast<uintptr_t>(mem) + 4096);
  ASSERT_NE(found, nullptr);
  EXPECT_LE(found->start, reinterpret_cast<uintptr_t>(mem));
  EXPECT_EQ(found->prot, PROT_READ);
  EXPECT_TRUE(found->shared);
  munmap(mem, 8192);
  maps = ReadMemoryMap();
  ASSERT_TRUE(maps.ok());
  found = FindMapping(*maps, reinterpret_cast<uintptr_t>(mem));
  EXPECT_TRUE(found == nullptr || found->start > reinterpret_cast<uintptr_t>(mem) ||
              found->end <= reinterpret_cast<uintptr_t>(mem));
}

}  // namespace
}  // namespace udiag::mmio
