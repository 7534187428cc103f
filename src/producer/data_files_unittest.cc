#include "producer/data_files.h"

#include <gtest/gtest.h>

namespace udiag::producer {
namespace {

EventSlot Slot(uint32_t id) { return EventSlot{id, 4, {}}; }

TEST(DataFileMirrorTest, BeforeAnyRestartTheDaemonsIndexIsTheProgramsIndex) {
  DataFileMirror mirror(1);
  EXPECT_TRUE(mirror.daemon_knows_indices());
  EXPECT_EQ(mirror.LocalIndexFor(3, Slot(40000)), 3u);
  ASSERT_NE(mirror.Find(3), nullptr);
  EXPECT_EQ(mirror.Find(3)->id, 40000u);
  EXPECT_EQ(mirror.Find(0), nullptr);
  EXPECT_EQ(mirror.end_index(), 4u);
}

TEST(DataFileMirrorTest, SlotsNeverChangeOncePublished) {
  DataFileMirror mirror(1);
  mirror.Set(0, Slot(40000));
  const EventSlot* first = mirror.Find(0);
  mirror.Set(0, Slot(40001));
  EXPECT_EQ(mirror.Find(0), first);
  EXPECT_EQ(first->id, 40000u);
}

// After a restart the program keeps its indices; the new daemon numbers the
// new file's events from 0 again, which must not collide with them.
TEST(DataFileMirrorTest, RemappedFileKeepsTheProgramsIndicesAndHandsOutNewOnesAfterThem) {
  DataFileMirror old(1);
  old.Set(0, Slot(40000));
  old.Set(1, Slot(40001));
  old.Set(2, Slot(40002));  // unregistered before the restart: not replayed

  DataFileMirror remapped(2, /*remapped=*/true);
  EXPECT_FALSE(remapped.daemon_knows_indices());
  remapped.Set(0, Slot(50007));  // the replayed registrations, new ids
  remapped.Set(1, Slot(50003));
  remapped.ContinueAfter(old);
  EXPECT_EQ(remapped.Find(0)->id, 50007u);
  EXPECT_EQ(remapped.Find(1)->id, 50003u);
  EXPECT_EQ(remapped.Find(2), nullptr);

  // A new event: the daemon says index 2 (its third on the new file), but
  // the program may still hold 2 from before: it gets 3.
  EXPECT_EQ(remapped.LocalIndexFor(2, Slot(50010)), 3u);
  EXPECT_EQ(remapped.Find(3)->id, 50010u);
  // The same event again gets the index it already has, as in the kernel.
  EXPECT_EQ(remapped.LocalIndexFor(0, Slot(50007)), 0u);
  EXPECT_EQ(remapped.LocalIndexFor(2, Slot(50010)), 3u);
}

TEST(DataFileTableTest, ReplaceKeepsTheOldMirrorReadableAndSkipsClosedFiles) {
  DataFileTable table;
  std::unique_lock lock(table.mutex());
  DataFileMirror* old = table.FindOrAdd(7, 1);
  old->Set(0, Slot(40000));
  auto* fresh = new DataFileMirror(2, true);
  table.Replace(7, fresh);
  EXPECT_EQ(table.Get(7), fresh);
  // A writer that loaded the old mirror still reads it: retired, not freed.
  EXPECT_EQ(old->Find(0)->id, 40000u);
  table.Replace(8, new DataFileMirror(2, true));  // not in the table: dropped
  EXPECT_EQ(table.Get(8), nullptr);
  lock.unlock();
  table.Remove(7);  // the table never frees its live mirrors by itself
}

}  // namespace
}  // namespace udiag::producer
