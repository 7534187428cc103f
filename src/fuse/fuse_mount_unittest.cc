// `udiag mount`: the issue's shell sequence against a mounted private daemon.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "consumer/consumer_client.h"
#include "consumer/private_daemon.h"

namespace udiag::fuse {
namespace {

using consumer::ConsumerClient;
using consumer::PrivateDaemon;

std::string BinDir() {
  const char* dir = std::getenv("UDIAG_BIN_DIR");
  return dir ? dir : ".";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool IsMounted(const std::string& dir) {
  std::string mounts = ReadAll("/proc/mounts");
  return mounts.find(" " + dir + " ") != std::string::npos;
}

struct Shell {
  int status = -1;
  std::string out;
  std::string err;
};

class FuseMountTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access("/dev/fuse", R_OK | W_OK) != 0) GTEST_SKIP() << "/dev/fuse is missing or not accessible";
    std::string error;
    daemon_ = PrivateDaemon::Start(&error);
    ASSERT_NE(daemon_, nullptr) << error;
    char tmpl[] = "/tmp/udiag-fuse-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    scratch_ = tmpl;
    mnt_ = scratch_ + "/mnt";
    ASSERT_EQ(mkdir(mnt_.c_str(), 0755), 0);
    Shell mount = Run(Udiag() + " mount --dir '" + daemon_->dir() + "' '" + mnt_ + "'", false);
    if (mount.status != 0 && mount.err.find("cannot mount") != std::string::npos) {
      GTEST_SKIP() << "mounting is not permitted here: " << mount.err;
    }
    ASSERT_EQ(mount.status, 0) << mount.err;
    ASSERT_TRUE(IsMounted(mnt_));
    mounted_ = true;
  }

  void TearDown() override {
    if (mounted_) Run(Udiag() + " umount '" + mnt_ + "'", /*in_mount=*/false);
    if (!mnt_.empty()) rmdir(mnt_.c_str());
    if (!scratch_.empty()) {
      unlink((scratch_ + "/out").c_str());
      unlink((scratch_ + "/err").c_str());
      rmdir(scratch_.c_str());
    }
  }

  std::string Udiag() const { return "'" + BinDir() + "/udiag'"; }

  // Runs `script` with bash in the mounted directory (else in the scratch one).
  Shell Run(const std::string& script, bool in_mount = true) {
    std::string out = scratch_ + "/out", err = scratch_ + "/err";
    std::string cmd = "cd '" + (mounted_ && in_mount ? mnt_ : scratch_) + "' && bash -c \"$UDIAG_SCRIPT\" >'" + out + "' 2>'" +
                      err + "' </dev/null";
    setenv("UDIAG_SCRIPT", script.c_str(), 1);
    Shell shell;
    int rc = std::system(cmd.c_str());
    shell.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    shell.out = ReadAll(out);
    shell.err = ReadAll(err);
    return shell;
  }

  std::unique_ptr<PrivateDaemon> daemon_;
  std::string scratch_;
  std::string mnt_;
  bool mounted_ = false;
};

TEST_F(FuseMountTest, IssueShellSequence) {
  Shell s = Run("echo 'u:test u32 count' >> dynamic_events");
  EXPECT_EQ(s.status, 0) << s.err;
  EXPECT_EQ(Run("cat dynamic_events").out, "u:test u32 count\n");
  EXPECT_EQ(Run("cat user_events_status").out, "test\n\nActive: 1\nBusy: 0\n");
  EXPECT_EQ(Run("ls events/user_events").out, "enable\nfilter\ntest\n");
  EXPECT_EQ(Run("ls -l events/user_events/filter | cut -c1-10").out, "-rw-r--r--\n");
  EXPECT_EQ(Run("ls -l events/user_events/test/enable | cut -c1-10").out, "-rw-r--r--\n");
  EXPECT_EQ(Run("ls -l events/user_events/test/format | cut -c1-10").out, "-r--r--r--\n");
  EXPECT_EQ(Run("ls -l events/user_events/test/trigger | cut -c1-10").out, "-rw-r--r--\n");

  s = Run("echo 1 > events/user_events/test/enable");
  EXPECT_EQ(s.status, 0) << s.err;
  EXPECT_EQ(Run("cat events/user_events/test/enable").out, "1\n");

  s = Run("echo '!u:test u32 count' >> dynamic_events");
  EXPECT_NE(s.status, 0);
  EXPECT_NE(s.err.find("Device or resource busy"), std::string::npos) << s.err;

  s = Run("echo 0 > events/user_events/test/enable");
  EXPECT_EQ(s.status, 0) << s.err;
  EXPECT_EQ(Run("cat events/user_events/test/enable").out, "0\n");

  s = Run("echo bad >> dynamic_events");
  EXPECT_NE(s.status, 0);
  EXPECT_NE(s.err.find("Invalid argument"), std::string::npos) << s.err;

  s = Run("echo '!u:test u32 count' >> dynamic_events");
  EXPECT_EQ(s.status, 0) << s.err;
  // The system's directory goes with its last event.
  EXPECT_EQ(Run("ls events/user_events 2>/dev/null").out.find("test"), std::string::npos);
  EXPECT_EQ(Run("cat dynamic_events").out, "");
  EXPECT_NE(Run("cat events/user_events/test/enable").status, 0);

  // Read-only files refuse writes; new files cannot be made.
  EXPECT_NE(Run("echo x > user_events_status").status, 0);
  EXPECT_NE(Run("echo x > no_such_file").status, 0);

  s = Run(Udiag() + " umount '" + mnt_ + "'", /*in_mount=*/false);
  EXPECT_EQ(s.status, 0) << s.err;
  mounted_ = false;
  EXPECT_FALSE(IsMounted(mnt_));
}

TEST_F(FuseMountTest, TruncatingOpenClearsDynamicEvents) {
  ASSERT_EQ(Run("echo 'u:a u32 x' >> dynamic_events && echo 'u:b u32 y' >> dynamic_events").status, 0);
  EXPECT_EQ(Run("cat dynamic_events").out, "u:a u32 x\nu:b u32 y\n");
  Shell s = Run("echo 'u:c u32 z' > dynamic_events");
  EXPECT_EQ(s.status, 0) << s.err;
  EXPECT_EQ(Run("cat dynamic_events").out, "u:c u32 z\n");
  s = Run(": > dynamic_events");
  EXPECT_EQ(s.status, 0) << s.err;
  EXPECT_EQ(Run("cat dynamic_events").out, "");
  // cat with a tiny buffer still sees everything: reads are served from the
  // snapshot taken at open.
  ASSERT_EQ(Run("echo 'u:long_event_name u32 a; u64 b; u32 c' >> dynamic_events").status, 0);
  EXPECT_EQ(Run("dd if=dynamic_events bs=3 status=none").out, "u:long_event_name u32 a; u64 b; u32 c\n");
}

TEST_F(FuseMountTest, TracePipeStreamsProducerEvents) {
  auto client = ConsumerClient::Connect(daemon_->dir());
  ASSERT_TRUE(client.ok());
  ASSERT_EQ(client->AutoEnable("example_c"), 0);
  std::string producer = "UDIAG_DIR='" + daemon_->dir() + "' '" + BinDir() + "/example_c' 5";
  Shell s = Run("( for i in 1 2 3 4 5 6 7 8 9 10; do " + producer +
                " >/dev/null 2>&1; sleep 0.2; done ) & timeout 5 head -n 3 trace_pipe; rc=$?; wait; exit $rc");
  EXPECT_EQ(s.status, 0) << s.err;
  int lines = 0;
  for (char c : s.out) lines += c == '\n';
  EXPECT_EQ(lines, 3) << s.out;
  EXPECT_NE(s.out.find("example_c"), std::string::npos) << s.out;
}

TEST_F(FuseMountTest, TracePipeReadIsInterruptible) {
  // Nothing is traced: `timeout` must still be able to stop a blocked reader.
  auto start = std::chrono::steady_clock::now();
  Shell s = Run("timeout 1 cat trace_pipe");
  EXPECT_EQ(s.status, 124) << s.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // The server survived the interruption.
  EXPECT_EQ(Run("cat tracing_on").out, "1\n");
}

// Resident memory of the process serving `mountpoint` (`udiag mount`), in KiB,
// or -1 when it is not found.
long MountServerRssKb(const std::string& mountpoint) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string cmdline = ReadAll(entry.path().string() + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(" mount ") == std::string::npos || cmdline.find(mountpoint) == std::string::npos) continue;
    std::istringstream status(ReadAll(entry.path().string() + "/status"));
    for (std::string line; std::getline(status, line);) {
      if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
    }
  }
  return -1;
}

// A trace_pipe reader that stops reading costs the mount server bounded
// memory; the events it missed are counted and shown as [LOST N EVENTS].
TEST_F(FuseMountTest, StoppedTracePipeReaderLosesEventsInsteadOfGrowingTheServer) {
  // Rounds small enough for the producer's ring and the daemon's 2 MiB
  // buffer, with pauses for the daemon to hand them on: some 20 MB of
  // trace_pipe text in all, which the server must not keep.
  constexpr int kRounds = 10, kPerRound = 30000, kEvents = kRounds * kPerRound;
  auto client = ConsumerClient::Connect(daemon_->dir());
  ASSERT_TRUE(client.ok());
  ASSERT_EQ(client->Write("buffer_size_kb", "2048", false), 0);
  ASSERT_EQ(client->AutoEnable("flood"), 0);
  int fd = open((mnt_ + "/trace_pipe").c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(fd, 0);
  const long rss_before = MountServerRssKb(mnt_);
  ASSERT_GT(rss_before, 0);

  std::string producer = "UDIAG_DIR='" + daemon_->dir() + "' '" + BinDir() + "/hammer_producer' flood " +
                         std::to_string(kPerRound);
  for (int round = 0; round < kRounds; ++round) {
    ASSERT_EQ(Run(producer + " >/dev/null", /*in_mount=*/false).status, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  EXPECT_LT(MountServerRssKb(mnt_) - rss_before, 8 * 1024) << "KiB grown while the reader stood still";

  std::string text;
  char buf[65536];
  for (int idle_polls = 0; idle_polls < 20;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      text.append(buf, n);
      idle_polls = 0;
    } else {
      ++idle_polls;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  close(fd);
  long lines = 0, lost = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find("flood: seq=") != std::string::npos) ++lines;
    if (size_t at = line.find("[LOST "); at != std::string::npos) lost += std::stol(line.substr(at + 6));
  }
  EXPECT_GT(lost, 0);
  EXPECT_EQ(lines + lost, kEvents) << lines << " lines, " << lost << " lost";
}

TEST_F(FuseMountTest, InstancesAreMadeAndRemovedWithMkdirAndRmdir) {
  ASSERT_EQ(Run("echo 'u:e u32 seq' >> dynamic_events").status, 0);
  Shell s = Run("mkdir instances/x");
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_EQ(Run("ls instances").out, "x\n");
  s = Run("mkdir instances/x");
  EXPECT_NE(s.err.find("File exists"), std::string::npos) << s.err;
  s = Run("mkdir events/nope");
  EXPECT_NE(s.status, 0);
  EXPECT_EQ(Run("ls instances/x/options").out, "overwrite\n");
  EXPECT_EQ(Run("cat instances/x/options/overwrite").out, "0\n");

  s = Run("echo 1 > instances/x/events/user_events/e/enable");
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_EQ(Run("cat instances/x/events/user_events/e/enable").out, "1\n");
  EXPECT_EQ(Run("cat events/user_events/e/enable").out, "0\n");  // the top instance is apart
  EXPECT_EQ(Run("cat user_events_status").out, "e # Used by ftrace\n\nActive: 1\nBusy: 1\n");

  std::string producer = "UDIAG_DIR='" + daemon_->dir() + "' '" + BinDir() + "/hammer_producer' e 3";
  s = Run(producer + " >/dev/null");
  ASSERT_EQ(s.status, 0) << s.err;
  s = Run("for i in $(seq 50); do grep -c 'e: seq=' instances/x/trace | grep -qx 3 && exit 0; sleep 0.1; done; "
          "cat instances/x/trace; exit 1");
  EXPECT_EQ(s.status, 0) << s.out;
  EXPECT_EQ(Run("grep -c 'e: seq=' trace").out, "0\n");

  s = Run("echo 1 > instances/x/snapshot && grep -c 'e: seq=' instances/x/snapshot");
  EXPECT_EQ(s.out, "3\n") << s.err;

  s = Run("rmdir instances/x");
  EXPECT_EQ(s.status, 0) << s.err;
  EXPECT_EQ(Run("ls instances").out, "");
  EXPECT_EQ(Run("cat user_events_status").out, "e\n\nActive: 1\nBusy: 0\n");
  s = Run("rmdir instances/x");
  EXPECT_NE(s.err.find("No such file"), std::string::npos) << s.err;
}

TEST_F(FuseMountTest, DaemonDeathUnmounts) {
  pid_t pid = daemon_->pid();
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (IsMounted(mnt_) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(IsMounted(mnt_));
  // `udiag umount` on what is no longer mounted fails but does not hang.
  mounted_ = false;
}

}  // namespace
}  // namespace udiag::fuse
