#include "service/kernel_event_ids.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace udiag::service {
namespace {

TEST(KernelEventIdsTest, ReadsEveryEventIdOfATree) {
  char tmpl[] = "/tmp/kernel_ids_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::filesystem::path root(tmpl);
  auto add = [&](const char* system, const char* event, const char* id) {
    std::filesystem::create_directories(root / "events" / system / event);
    if (id) std::ofstream(root / "events" / system / event / "id") << id;
  };
  add("sched", "sched_switch", "316\n");
  add("writeback", "flush_foreign", "1000\n");
  add("ftrace", "function", nullptr);  // no id file: skipped
  add("bad", "text", "abc\n");         // not a number: skipped
  std::ofstream(root / "events" / "enable") << "0\n";
  std::vector<uint32_t> ids = TracepointIdsUnder(root);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<uint32_t>{316, 1000}));
  EXPECT_TRUE(TracepointIdsUnder(root / "missing").empty());
  std::filesystem::remove_all(root);
}

TEST(KernelEventIdsTest, RealTracefsIsTracefsOrNothing) {
  std::string root = RealTracefsRoot();
  if (root.empty()) GTEST_SKIP() << "no tracefs mounted here";
  EXPECT_TRUE(root == "/sys/kernel/tracing" || root == "/sys/kernel/debug/tracing");
}

}  // namespace
}  // namespace udiag::service
