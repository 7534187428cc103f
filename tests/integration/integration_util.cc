#include "integration_util.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "base/daemon_dir.h"
#include "base/unix_socket.h"

extern char** environ;

namespace udiag::integration {

using Clock = std::chrono::steady_clock;

std::string BinDir() {
  if (const char* dir = getenv("UDIAG_BIN_DIR"); dir && *dir) return dir;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : self.parent_path().string();
}

std::string Bin(const std::string& name) { return BinDir() + "/" + name; }

pid_t StartProcess(const std::vector<std::string>& argv, const SpawnOptions& options) {
  // Everything the child needs is built before fork: the test may have
  // threads, so the child must not allocate.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    if (!options.udiag_dir.empty() && strncmp(*e, "UDIAG_DIR=", 10) == 0) continue;
    env_strings.emplace_back(*e);
  }
  if (!options.udiag_dir.empty()) env_strings.push_back("UDIAG_DIR=" + options.udiag_dir);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);
  int out = -1, err = -1;
  if (!options.stdout_path.empty()) out = open(options.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (!options.stderr_path.empty()) err = open(options.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    setpgid(0, 0);  // a timeout kills what it started too (WaitExit)
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    if (out >= 0) dup2(out, STDOUT_FILENO);
    if (err >= 0) dup2(err, STDERR_FILENO);
    if (options.drop_to) {
      if (setgroups(0, nullptr) < 0 || setgid(options.drop_to->gid) < 0 || setuid(options.drop_to->uid) < 0) _exit(125);
    }
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  if (pid > 0) setpgid(pid, pid);  // as the child does: whichever runs first
  if (out >= 0) close(out);
  if (err >= 0) close(err);
  return pid;
}

int WaitExit(pid_t pid, std::chrono::milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    int status;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -1;
    if (Clock::now() > deadline) {
      // The whole group: a hung grandchild would otherwise outlive the test
      // and hold ctest's output pipe open until ctest's own timeout.
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(5ms);
  }
}

int RunProgram(const std::vector<std::string>& argv, const SpawnOptions& options, std::chrono::milliseconds timeout) {
  pid_t pid = StartProcess(argv, options);
  if (pid < 0) return -1;
  return WaitExit(pid, timeout);
}

bool PollUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
}

std::string ReadTree(const std::string& dir, const std::string& path) {
  auto client = consumer::ConsumerClient::Connect(dir);
  if (!client.ok()) return "";
  auto text = client->Read(path);
  return text.ok() ? *text : "";
}

consumer::ConsumerClient MustConnect(const std::string& dir) {
  auto client = consumer::ConsumerClient::Connect(dir);
  if (!client.ok()) {
    ADD_FAILURE() << "cannot connect to udiagd at " << dir << ": " << strerror(client.error());
    abort();
  }
  return std::move(client).value();
}

std::map<uint32_t, int> SeqsOf(const std::string& trace, const std::string& event) {
  std::map<uint32_t, int> seqs;
  std::string key = " " + event + ": seq=0x";
  for (size_t pos = trace.find(key); pos != std::string::npos; pos = trace.find(key, pos + 1)) {
    size_t open = trace.find(" (", pos + key.size());
    size_t eol = trace.find('\n', pos);
    if (open == std::string::npos || open > eol) continue;
    seqs[static_cast<uint32_t>(strtoul(trace.c_str() + open + 2, nullptr, 10))]++;
  }
  return seqs;
}

uint64_t LostCount(const std::string& trace) {
  uint64_t lost = 0;
  const std::string key = "[LOST ";
  for (size_t pos = trace.find(key); pos != std::string::npos; pos = trace.find(key, pos + 1)) {
    lost += strtoull(trace.c_str() + pos + key.size(), nullptr, 10);
  }
  return lost;
}

std::string CheckExactlyOnce(const std::map<uint32_t, int>& seqs, uint32_t count) {
  std::ostringstream problems;
  int missing = 0;
  for (uint32_t i = 0; i < count; ++i) {
    auto it = seqs.find(i);
    if (it == seqs.end()) {
      if (missing++ < 10) problems << "missing " << i << "; ";
    } else if (it->second != 1) {
      problems << i << " seen " << it->second << " times; ";
    }
  }
  if (missing) problems << missing << " missing in all; ";
  for (auto& [seq, n] : seqs)
    if (seq >= count) problems << "unexpected " << seq << "; ";
  return problems.str();
}

std::string ReadFileText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool ProcessRunning(pid_t pid) {
  std::string stat = ReadFileText("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

TempDir::TempDir() {
  const char* tmp = getenv("TMPDIR");
  path_ = std::string(tmp && *tmp ? tmp : "/tmp") + "/udiag-it-XXXXXX";
  if (!mkdtemp(path_.data())) {
    ADD_FAILURE() << "mkdtemp: " << strerror(errno);
    path_.clear();
  }
}

TempDir::~TempDir() {
  std::error_code ignored;
  if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
}

std::string DaemonProcess::Start(const std::string& dir, const std::vector<std::string>& extra,
                                 const std::string& stderr_path) {
  std::vector<std::string> argv = {Bin("udiagd"), "--dir", dir};
  argv.insert(argv.end(), extra.begin(), extra.end());
  pid_ = StartProcess(argv, {.stderr_path = stderr_path});
  if (pid_ < 0) return "fork failed";
  std::string socket = base::ControlSocketPath(dir);
  Clock::time_point deadline = Clock::now() + 5s;
  for (;;) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = 0;
      return "udiagd exited before serving, status " + std::to_string(status);
    }
    if (base::ConnectSeqpacket(socket).ok()) return "";
    if (Clock::now() > deadline) return "udiagd did not serve " + socket + " within 5 s";
    std::this_thread::sleep_for(10ms);
  }
}

int DaemonProcess::Stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = WaitExit(pid_, 3s);
  pid_ = 0;
  return status;
}

bool DaemonProcess::Alive() {
  if (pid_ <= 0) return false;
  int status;
  return waitpid(pid_, &status, WNOHANG) == 0;
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0) Stop();
}

void PrivateDaemonTest::SetUp() {
  std::string error;
  daemon_ = consumer::PrivateDaemon::Start(&error);
  ASSERT_NE(daemon_, nullptr) << error;
  dir_ = daemon_->dir();
  client_.emplace(MustConnect(dir_));
}

std::string PrivateDaemonTest::Read(const std::string& path) {
  auto text = client_->Read(path);
  EXPECT_TRUE(text.ok()) << path << ": " << text.error();
  return text.ok() ? *text : "";
}

}  // namespace udiag::integration
