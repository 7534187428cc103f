// System calls seen through strace: (e) the write path makes none (100,000
// enabled writes cost far fewer than 1,000 write/writev/sendmsg/recvmsg calls
// in the whole producer), and udiagd does without epoll_pwait2.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <sstream>

#include <gtest/gtest.h>

#include "base/daemon_dir.h"
#include "base/unix_socket.h"
#include "consumer/private_daemon.h"
#include "integration_util.h"

namespace udiag::integration {
namespace {

std::string FindInPath(const std::string& name) {
  const char* path = getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');) {
    std::string candidate = d + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// The "calls" column of strace -c's total line (-1 if absent).
long TotalCalls(const std::string& summary) {
  std::istringstream lines(summary);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (!w.empty() && w.back() == "total" && w.size() >= 5) return std::stol(w[3]);
  }
  return -1;
}

TEST(SyscallCountTest, HundredThousandEnabledWritesMakeFewSystemCalls) {
  std::string strace = FindInPath("strace");
  if (strace.empty()) GTEST_SKIP() << "strace is not installed";
  std::string error;
  auto daemon = consumer::PrivateDaemon::Start(&error);
  ASSERT_NE(daemon, nullptr) << error;
  auto consumer = MustConnect(daemon->dir());
  ASSERT_EQ(consumer.AutoEnable("counted"), 0);

  TempDir scratch;
  std::string summary_path = scratch.path() + "/strace.txt";
  // LeakSanitizer cannot run under ptrace: switch it off in an ASan build.
  int status = RunProgram({strace, "-f", "-c", "-o", summary_path, "-e", "trace=write,writev,sendmsg,recvmsg",
                           "-E", "ASAN_OPTIONS=detect_leaks=0",
                    Bin("hammer_producer"), "counted", "100000"},
                   {.udiag_dir = daemon->dir()}, 120s);
  std::string summary = ReadFileText(summary_path);
  ASSERT_EQ(status, 0) << summary;
  long calls = TotalCalls(summary);
  ASSERT_GE(calls, 0) << "cannot parse strace output:\n" << summary;
  EXPECT_LT(calls, 1000) << summary;
  EXPECT_GT(calls, 0) << "registration itself talks to the daemon:\n" << summary;

  // The writes did happen: the daemon saw (nearly) all of them; a ring
  // overflow may drop some, which the trace must then report.
  std::string trace;
  PollUntil([&] {
    auto t = consumer.Read("trace");
    trace = t.ok() ? *t : "";
    return trace.find("entries-written: 100000") != std::string::npos;
  }, 3s);
  size_t at = trace.find("entries-in-buffer/entries-written: ");
  ASSERT_NE(at, std::string::npos) << trace.substr(0, 500);
  EXPECT_NE(trace.find("counted: seq=0x"), std::string::npos);
}

// Kernels before 5.11 (and valgrind) have no epoll_pwait2: udiagd falls back
// to epoll_wait and serves as usual. strace makes epoll_pwait2 fail with ENOSYS.
TEST(SyscallCountTest, DaemonServesWhereEpollPwait2IsMissing) {
  std::string strace = FindInPath("strace");
  if (strace.empty()) GTEST_SKIP() << "strace is not installed";
  TempDir scratch;
  const std::string dir = scratch.path() + "/daemon";
  const std::string log = scratch.path() + "/strace.txt";
  pid_t tracer = StartProcess({strace, "-f", "-o", log, "-e", "trace=epoll_pwait2,epoll_wait", "-e",
                               "inject=epoll_pwait2:error=ENOSYS", "-E", "ASAN_OPTIONS=detect_leaks=0",
                               Bin("udiagd"), "--dir", dir},
                              {});
  ASSERT_GT(tracer, 0);
  ASSERT_TRUE(PollUntil([&] { return base::ConnectSeqpacket(base::ControlSocketPath(dir)).ok(); }, 10s))
      << ReadFileText(log).substr(0, 2000);
  {
    auto consumer = MustConnect(dir);
    ASSERT_EQ(consumer.AutoEnable("fallback"), 0);
    ASSERT_EQ(RunProgram({Bin("hammer_producer"), "fallback", "20"}, {.udiag_dir = dir}), 0);
    std::string trace;
    EXPECT_TRUE(PollUntil([&] {
      auto t = consumer.Read("trace");
      trace = t.ok() ? *t : "";
      return CheckExactlyOnce(SeqsOf(trace, "fallback"), 20).empty();
    }));
    EXPECT_EQ(CheckExactlyOnce(SeqsOf(trace, "fallback"), 20), "") << trace;
  }
  // The daemon is strace's child: stop it through its pid file.
  const pid_t daemon = atoi(ReadFileText(base::LockFilePath(dir)).c_str());
  ASSERT_GT(daemon, 0) << "udiagd exited";
  ASSERT_EQ(kill(daemon, SIGTERM), 0);
  EXPECT_EQ(WaitExit(tracer, 10s), 0);
  const std::string calls = ReadFileText(log);
  EXPECT_NE(calls.find("epoll_pwait2("), std::string::npos) << calls.substr(0, 2000);
  EXPECT_NE(calls.find("(INJECTED)"), std::string::npos) << calls.substr(0, 2000);
  EXPECT_NE(calls.find("epoll_wait("), std::string::npos) << "no fallback:\n" << calls.substr(0, 2000);
}

}  // namespace
}  // namespace udiag::integration
