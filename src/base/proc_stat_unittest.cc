#include "base/proc_stat.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "base/tsc.h"

namespace udiag::base {
namespace {

constexpr uint64_t kTickNs = 10'000'000;  // the usual 100 Hz: a start reads up to a tick early

TEST(ProcStatTest, FieldsStartAtTheStateAfterANameWithParentheses) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    prctl(PR_SET_NAME, "a) b (c");
    pause();
    _exit(0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the name is set
  std::string fields;
  const bool read = ProcStatFields(child, &fields);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE(read);
  char state;
  int ppid;
  ASSERT_EQ(std::sscanf(fields.c_str(), "%c %d", &state, &ppid), 2) << fields;
  EXPECT_EQ(ppid, getpid());
}

TEST(ProcessStartTest, AChildStartsAfterItsParentAndBeforeNow) {
  const uint64_t before_fork = MonotonicNs();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // more than a tick
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  const uint64_t child_start = ProcessStartNs(child);
  const uint64_t self_start = ProcessStartNs(getpid());
  const uint64_t now = MonotonicNs();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_GT(self_start, 0u);
  EXPECT_LE(self_start, before_fork);
  EXPECT_GE(child_start + 2 * kTickNs, before_fork + 50'000'000) << "the child started after the sleep";
  EXPECT_LE(child_start, now);
  EXPECT_LT(self_start, child_start);
}

TEST(ProcessStartTest, AProcessThatIsGoneStartedAtBoot) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(ProcessStartNs(child), 0u);
}

}  // namespace
}  // namespace udiag::base
