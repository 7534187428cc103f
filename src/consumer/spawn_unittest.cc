#include "consumer/spawn.h"

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <vector>

#include <gtest/gtest.h>

namespace udiag::consumer {
namespace {

TEST(SpawnTest, ReportsAMissingProgram) {
  auto pid = Spawn({"/nonexistent/udiag-test-program"});
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.error(), ENOENT);
}

TEST(SpawnTest, ReturnsTheExitCode) {
  auto pid = Spawn({"sh", "-c", "exit 3"});
  ASSERT_TRUE(pid.ok());
  EXPECT_EQ(WaitForExit(*pid), 3);
}

TEST(SpawnTest, ReportsADeathBySignalLikeAShell) {
  auto pid = Spawn({"sh", "-c", "kill -TERM $$"});
  ASSERT_TRUE(pid.ok());
  EXPECT_EQ(WaitForExit(*pid), 128 + SIGTERM);
}

TEST(SpawnTest, ChildDoesNotInheritAnIgnoredSigpipe) {
  signal(SIGPIPE, SIG_IGN);
  // Exits with bit 13 (SIGPIPE) of the shell's ignored-signals mask.
  auto pid = Spawn({"sh", "-c", "exit $(( 0x$(awk '/^SigIgn/ {print $2}' /proc/$$/status) >> 12 & 1 ))"});
  signal(SIGPIPE, SIG_DFL);
  ASSERT_TRUE(pid.ok());
  EXPECT_EQ(WaitForExit(*pid), 0);
}

TEST(SpawnTest, ChildDoesNotInheritOurBlockedSignals) {
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &old);
  auto pid = Spawn({"sh", "-c", "kill -TERM $$; exit 0"});
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(pid.ok());
  EXPECT_EQ(WaitForExit(*pid), 128 + SIGTERM);
}

// A recorder spawns its command just as it starts writing at full rate:
// starting the command must not write-protect (copy-on-write) our memory,
// which would cost a page fault per page we write next.
TEST(SpawnTest, LeavesOurMemoryWritableWithoutFaults) {
  constexpr size_t kPages = 2048;
  std::vector<char> memory(kPages * 4096, 1);  // touched: its pages are ours
  auto pid = Spawn({"true"});
  ASSERT_TRUE(pid.ok());
  EXPECT_EQ(WaitForExit(*pid), 0);
  rusage before, after;
  getrusage(RUSAGE_SELF, &before);
  for (size_t i = 0; i < memory.size(); i += 4096) memory[i] = 2;
  getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_minflt - before.ru_minflt, static_cast<long>(kPages / 16));
}

TEST(SpawnTest, RunsSetupInTheChild) {
  auto pid = Spawn({"sh", "-c", "exit 0"}, [] { _exit(7); });
  ASSERT_TRUE(pid.ok());
  EXPECT_EQ(WaitForExit(*pid), 7);
}

}  // namespace
}  // namespace udiag::consumer
