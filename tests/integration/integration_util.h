// Helpers shared by the integration tests: running udiagd and producer
// programs as real processes, polling the daemon's tracefs, parsing traces.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "consumer/consumer_client.h"
#include "consumer/private_daemon.h"

namespace udiag::integration {

using namespace std::chrono_literals;

// Where udiagd, udiag, example_* and the test producers are.
std::string BinDir();
std::string Bin(const std::string& name);

struct Credentials {
  uid_t uid;
  gid_t gid;
};

struct SpawnOptions {
  std::string udiag_dir;                 // exported as $UDIAG_DIR when non-empty
  std::optional<Credentials> drop_to;    // setgroups(0), setgid, setuid in the child
  std::string stdout_path, stderr_path;  // redirections (empty: inherit)
};

// fork + execve of argv[0] (a path). Returns the pid or -1.
pid_t StartProcess(const std::vector<std::string>& argv, const SpawnOptions& options);

// Waits up to `timeout` for `pid`; returns its shell status (exit code, or
// 128 + signal). On timeout kills it with SIGKILL and returns -1.
int WaitExit(pid_t pid, std::chrono::milliseconds timeout = 30s);

// Runs a program to completion (see WaitExit for the result).
int RunProgram(const std::vector<std::string>& argv, const SpawnOptions& options,
        std::chrono::milliseconds timeout = 30s);

// True once `pred` holds, polling every 10 ms until `timeout`.
bool PollUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 5s);

// Reads a file of the daemon's tracefs on a fresh connection ("" on error).
std::string ReadTree(const std::string& dir, const std::string& path);

// Connects, failing the calling test on error.
consumer::ConsumerClient MustConnect(const std::string& dir);

// Maps seq -> occurrences of "`event`: seq=0x.. (N)" lines in trace text.
std::map<uint32_t, int> SeqsOf(const std::string& trace, const std::string& event);

// Sum of N over the "[LOST N EVENTS]" lines of trace text.
uint64_t LostCount(const std::string& trace);

// Describes which of 0..count-1 are missing or duplicated ("" when exactly once each).
std::string CheckExactlyOnce(const std::map<uint32_t, int>& seqs, uint32_t count);

std::string ReadFileText(const std::string& path);

// True while `pid` exists and is not a zombie (kill(pid, 0) succeeds on zombies).
bool ProcessRunning(pid_t pid);

// A temporary directory removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A udiagd child with chosen arguments (PrivateDaemon only knows --dir).
class DaemonProcess {
 public:
  // Starts `udiagd --dir dir extra...` with stderr to `stderr_path` and waits
  // until it accepts connections. Returns an error sentence, or "".
  std::string Start(const std::string& dir, const std::vector<std::string>& extra = {},
                    const std::string& stderr_path = "");
  // SIGTERM and reap; returns the shell status (-1 if it had to be killed).
  int Stop();
  bool Alive();
  pid_t pid() const { return pid_; }
  ~DaemonProcess();

 private:
  pid_t pid_ = 0;
};

// A test with a udiagd of its own, in a temporary directory (dir_).
class PrivateDaemonTest : public ::testing::Test {
 protected:
  // Starts the daemon and connects client_ to it.
  void SetUp() override;
  // A tree file's text through client_; "" (and a test failure) on error.
  std::string Read(const std::string& path);
  std::unique_ptr<consumer::PrivateDaemon> daemon_;
  std::string dir_;
  std::optional<consumer::ConsumerClient> client_;
};

}  // namespace udiag::integration
