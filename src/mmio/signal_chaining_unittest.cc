// Signals that are not probe faults reach the program as if the library were
// not there: default actions kill by the same signal, the program's own
// handlers (installed before the first probe) still run.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "mmio/probe_test_support.h"
#include "udiag/mmio.h"

namespace udiag::mmio::testing {
namespace {

constexpr int kHandledExitCode = 42;

// Registers a probe, which installs our handlers in this (child) process;
// exits with 4 if they did not replace the program's. GoogleTest runs the
// death tests first, before any probe exists in the parent.
void ArmOneProbe() {
  struct sigaction before, after;
  sigaction(SIGSEGV, nullptr, &before);
  static SharedPages pages(1);
  static udiag_mmio_probe probe{};
  probe.addr = reinterpret_cast<uintptr_t>(pages.base());
  probe.len = 8;
  if (udiag_mmio_register_probe(&probe) != 0) _exit(3);
  sigaction(SIGSEGV, nullptr, &after);
  if (after.sa_sigaction == before.sa_sigaction) _exit(4);
}

void ExitFromHandler(int) { _exit(kHandledExitCode); }
void ExitFromSiginfoHandler(int, siginfo_t*, void*) { _exit(kHandledExitCode); }

void InstallProgramHandler(int sig, bool siginfo) {
  struct sigaction action{};
  if (siginfo) {
    action.sa_sigaction = ExitFromSiginfoHandler;
    action.sa_flags = SA_SIGINFO;
  } else {
    action.sa_handler = ExitFromHandler;
  }
  sigaction(sig, &action, nullptr);
}

// In assembly, so that UBSan's null check does not get there first.
void NullDereference() {
  uintptr_t near_null = 8;
  asm volatile("movl $1, (%0)" : : "r"(near_null) : "memory");
}

void Breakpoint() { asm volatile("int3"); }

// In sanitizer builds the sanitizer's SEGV handler was there first: chained
// to, it reports "SEGV" and exits with its own code.
#if defined(__SANITIZE_ADDRESS__)
#define EXPECT_DIES_BY_SEGV(statement) EXPECT_EXIT(statement, ::testing::ExitedWithCode(1), "SEGV")
#elif defined(__SANITIZE_THREAD__)
#define EXPECT_DIES_BY_SEGV(statement) EXPECT_EXIT(statement, ::testing::ExitedWithCode(66), "SEGV")
#else
#define EXPECT_DIES_BY_SEGV(statement) EXPECT_EXIT(statement, ::testing::KilledBySignal(SIGSEGV), "")
#endif

TEST(SignalChainingDeathTest, NullDereferenceStillKillsBySigsegv) {
  EXPECT_DIES_BY_SEGV({
    ArmOneProbe();
    NullDereference();
  });
}

TEST(SignalChainingDeathTest, ProgramSigsegvHandlerStillRuns) {
  for (bool siginfo : {false, true}) {
    EXPECT_EXIT(
        {
          InstallProgramHandler(SIGSEGV, siginfo);
          ArmOneProbe();
          NullDereference();
        },
        ::testing::ExitedWithCode(kHandledExitCode), "");
  }
}

TEST(SignalChainingDeathTest, RaisedSigsegvStillKills) {
  EXPECT_DIES_BY_SEGV({
    ArmOneProbe();
    raise(SIGSEGV);
  });
}

TEST(SignalChainingDeathTest, UnrelatedTrapsStillKillBySigtrap) {
  EXPECT_EXIT(
      {
        ArmOneProbe();
        Breakpoint();
      },
      ::testing::KilledBySignal(SIGTRAP), "");
  EXPECT_EXIT(
      {
        ArmOneProbe();
        raise(SIGTRAP);
      },
      ::testing::KilledBySignal(SIGTRAP), "");
}

TEST(SignalChainingDeathTest, ProgramSigtrapHandlerStillRuns) {
  EXPECT_EXIT(
      {
        InstallProgramHandler(SIGTRAP, true);
        ArmOneProbe();
        Breakpoint();
      },
      ::testing::ExitedWithCode(kHandledExitCode), "");
  EXPECT_EXIT(
      {
        InstallProgramHandler(SIGTRAP, false);
        ArmOneProbe();
        raise(SIGTRAP);
      },
      ::testing::ExitedWithCode(kHandledExitCode), "");
}

TEST(SignalChainingDeathTest, IgnoredSigtrapStaysIgnored) {
  EXPECT_EXIT(
      {
        signal(SIGTRAP, SIG_IGN);
        ArmOneProbe();
        raise(SIGTRAP);
        _exit(kHandledExitCode);
      },
      ::testing::ExitedWithCode(kHandledExitCode), "");
}

}  // namespace
}  // namespace udiag::mmio::testing
