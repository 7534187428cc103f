// (e) The write path makes no system call: 100,000 enabled writes cost far
// fewer than 1,000 write/writev/sendmsg/recvmsg calls in the whole producer.
#include <unistd.h>

#include <sstream>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace udiag::integration
