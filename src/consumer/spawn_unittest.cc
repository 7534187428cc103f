#include "consumer/spawn.h"

#include <signal.h>

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

TEST(SpawnTest, RunsSetupInTheChild) {
  auto pid = Spawn({"sh", "-c", "exit 0"}, [] { _exit(7); });
  ASSERT_TRUE(pid.ok());
  EXPECT_EQ(WaitForExit(*pid), 7);
}

}  // namespace
}  // namespace udiag::consumer
