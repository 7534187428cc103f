// (g) Access control of a root daemon: producers need --producer-group,
// consumers need --consumer-group; uid 65534 stands in for an ordinary user.
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "integration_util.h"
#include "system_daemon_test.h"

namespace udiag::integration {
namespace {

constexpr uid_t kNobody = 65534;
constexpr gid_t kProducerGid = 4242;
constexpr gid_t kConsumerGid = 4343;

class AccessControlTest : public SystemDaemonTest {
 protected:
  // In a child running as kNobody/`gid`: connects as a consumer, reads
  // `trace` and writes an enable file. Returns "read=<errno> write=<errno>"
  // (connect=<errno> if it cannot connect).
  std::string ConsumerAttemptAs(gid_t gid) {
    int fds[2];
    if (pipe(fds) < 0) return "pipe failed";
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      std::string result;
      if (setgroups(0, nullptr) < 0 || setgid(gid) < 0 || setuid(kNobody) < 0) {
        result = "setuid failed";
      } else {
        auto client = consumer::ConsumerClient::Connect(dir_);
        if (!client.ok()) {
          result = "connect=" + std::to_string(client.error());
        } else {
          auto trace = client->Read("trace");
          int write_err = client->Write("events/user_events/guarded/enable", "1", false);
          result = "read=" + std::to_string(trace.ok() ? 0 : trace.error()) + " write=" + std::to_string(write_err);
        }
      }
      [[maybe_unused]] ssize_t n = write(fds[1], result.data(), result.size());
      _exit(0);
    }
    close(fds[1]);
    std::string out;
    char buf[256];
    for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) out.append(buf, n);
    close(fds[0]);
    WaitExit(pid, 10s);
    return out;
  }

  // The build tree may lie under a directory uid 65534 cannot enter (a 0700
  // clone or home): runs a copy of program `name`, with the libraries it
  // loads, from beside the daemon's directory.
  std::string RunnableByNobody(const std::string& name) {
    namespace fs = std::filesystem;
    const std::string bin = parent_.path() + "/bin", lib = parent_.path() + "/lib";
    fs::create_directories(bin);
    fs::create_directories(lib);
    auto copy_once = [](const fs::path& from, const fs::path& to) {
      if (!fs::exists(fs::symlink_status(to))) fs::copy(from, to, fs::copy_options::copy_symlinks);
    };
    copy_once(Bin(name), bin + "/" + name);
    for (const fs::directory_entry& entry : fs::directory_iterator(BinDir() + "/../lib")) {
      std::string file = entry.path().filename();
      if (file.starts_with("libudiag.so")) copy_once(entry.path(), lib + "/" + file);
    }
    setenv("LD_LIBRARY_PATH", lib.c_str(), 1);  // children inherit it
    return bin + "/" + name;
  }
};

TEST_F(AccessControlTest, UnprivilegedUserIsNotAProducerByDefault) {
  DaemonProcess daemon;
  ASSERT_EQ(daemon.Start(dir_), "");
  int status = RunProgram({RunnableByNobody("hammer_producer"), "denied", "1"},
                   {.udiag_dir = dir_, .drop_to = Credentials{kNobody, kNobody}}, 10s);
  EXPECT_EQ(status, 64 + EACCES) << "udiag_open should fail with EACCES (exit 64+errno)";
  // Root still may.
  auto consumer = MustConnect(dir_);
  ASSERT_EQ(consumer.AutoEnable("allowed"), 0);
  EXPECT_EQ(RunProgram({Bin("hammer_producer"), "allowed", "3"}, {.udiag_dir = dir_}), 0);
}

TEST_F(AccessControlTest, ProducerGroupMemberCanProduce) {
  DaemonProcess daemon;
  ASSERT_EQ(daemon.Start(dir_, {"--producer-group", std::to_string(kProducerGid)}), "");
  auto consumer = MustConnect(dir_);
  ASSERT_EQ(consumer.AutoEnable("grouped"), 0);
  int status = RunProgram({RunnableByNobody("hammer_producer"), "grouped", "25"},
                   {.udiag_dir = dir_, .drop_to = Credentials{kNobody, kProducerGid}}, 20s);
  ASSERT_EQ(status, 0);
  std::string trace;
  EXPECT_TRUE(PollUntil([&] {
    auto t = consumer.Read("trace");
    trace = t.ok() ? *t : "";
    return SeqsOf(trace, "grouped").size() == 25;
  })) << trace;
  EXPECT_EQ(CheckExactlyOnce(SeqsOf(trace, "grouped"), 25), "");
  // Another group is still refused.
  EXPECT_EQ(RunProgram({RunnableByNobody("hammer_producer"), "grouped", "1"},
                {.udiag_dir = dir_, .drop_to = Credentials{kNobody, kConsumerGid}}, 10s),
            64 + EACCES);
}

TEST_F(AccessControlTest, ProducerOnlyUserCannotConsume) {
  DaemonProcess daemon;
  ASSERT_EQ(daemon.Start(dir_, {"--producer-group", std::to_string(kProducerGid), "--consumer-group",
                                std::to_string(kConsumerGid)}),
            "");
  auto root = MustConnect(dir_);
  ASSERT_EQ(root.Write("dynamic_events", "u:guarded u32 seq", true), 0);
  EXPECT_EQ(ConsumerAttemptAs(kProducerGid), "read=" + std::to_string(EACCES) + " write=" + std::to_string(EACCES));
  auto enable = root.Read("events/user_events/guarded/enable");
  ASSERT_TRUE(enable.ok());
  EXPECT_EQ(*enable, "0\n");
  // Control: a member of the consumer group may do both.
  EXPECT_EQ(ConsumerAttemptAs(kConsumerGid), "read=0 write=0");
  enable = root.Read("events/user_events/guarded/enable");
  ASSERT_TRUE(enable.ok());
  EXPECT_EQ(*enable, "1\n");
}

}  // namespace
}  // namespace udiag::integration
