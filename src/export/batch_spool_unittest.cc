#include "export/batch_spool.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <filesystem>

namespace udiag::exporter {
namespace {

TEST(BatchSpoolTest, KeepsBatchesInOrderAcrossInstancesWithinItsBound) {
  char dir_template[] = "/tmp/udiag-spool-XXXXXX";
  std::string dir = mkdtemp(dir_template);
  Batch a{1, "t", "x UInt8", std::string("\x00\x01", 2), 2};
  Batch b{2, "u", "y String", "zz", 1};
  {
    BatchSpool spool(dir, 200);
    ASSERT_EQ(spool.Put(a), 0);
    Batch big{3, "t", "x UInt8", std::string(300, 'x'), 300};
    EXPECT_EQ(spool.Put(big), ENOSPC);
  }
  BatchSpool spool(dir, 200);  // a new run finds the old batch first
  ASSERT_EQ(spool.Put(b), 0);
  EXPECT_EQ(spool.count(), 2u);
  auto path = spool.Oldest();
  ASSERT_TRUE(path);
  auto loaded = BatchSpool::Load(*path);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->id, 1u);
  EXPECT_EQ(loaded->table, "t");
  EXPECT_EQ(loaded->signature, "x UInt8");
  EXPECT_EQ(loaded->rows, a.rows);
  EXPECT_EQ(loaded->row_count, 2u);
  spool.Remove(*path);
  EXPECT_EQ(BatchSpool::Load(*spool.Oldest())->id, 2u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace udiag::exporter
