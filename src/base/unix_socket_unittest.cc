#include "base/unix_socket.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace udiag::base {
namespace {

TEST(UnixSocketTest, MessagesKeepBoundariesAndCarryFds) {
  ScopedFd a, b;
  ASSERT_EQ(SeqpacketPair(&a, &b), 0);
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  ScopedFd read_end(pipefd[0]), write_end(pipefd[1]);

  const uint8_t first[] = {1, 2, 3};
  const uint8_t second[] = {4};
  int fds[] = {write_end.get()};
  ASSERT_EQ(SendMessage(a.get(), first, fds), 0);
  ASSERT_EQ(SendMessage(a.get(), second), 0);

  std::vector<uint8_t> data;
  std::vector<ScopedFd> got;
  ASSERT_EQ(ReceiveMessage(b.get(), &data, &got), 0);
  EXPECT_EQ(data, std::vector<uint8_t>({1, 2, 3}));
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(write(got[0].get(), "x", 1), 1);  // the received fd is the pipe
  char c;
  ASSERT_EQ(read(read_end.get(), &c, 1), 1);
  EXPECT_EQ(c, 'x');

  ASSERT_EQ(ReceiveMessage(b.get(), &data, &got), 0);
  EXPECT_EQ(data, std::vector<uint8_t>({4}));
  EXPECT_TRUE(got.empty());
}

TEST(UnixSocketTest, EndOfStreamIsConnReset) {
  ScopedFd a, b;
  ASSERT_EQ(SeqpacketPair(&a, &b), 0);
  a.Reset();
  std::vector<uint8_t> data;
  std::vector<ScopedFd> fds;
  EXPECT_EQ(ReceiveMessage(b.get(), &data, &fds), ECONNRESET);
  EXPECT_EQ(SendMessage(b.get(), data), EPIPE);
}

TEST(UnixSocketTest, DontWaitReportsEagain) {
  ScopedFd a, b;
  ASSERT_EQ(SeqpacketPair(&a, &b), 0);
  std::vector<uint8_t> data;
  std::vector<ScopedFd> fds;
  EXPECT_EQ(ReceiveMessage(b.get(), &data, &fds, /*dontwait=*/true), EAGAIN);
}

TEST(UnixSocketTest, ListenConnectAndPeerCredentials) {
  char dir[] = "/tmp/udiag-sock-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/s";
  auto listener = ListenSeqpacket(path);
  ASSERT_TRUE(listener.ok()) << listener.error();
  auto client = ConnectSeqpacket(path);
  ASSERT_TRUE(client.ok()) << client.error();
  auto server = AcceptSeqpacket(listener->get());
  ASSERT_TRUE(server.ok()) << server.error();
  auto cred = GetPeerCredentials(server->get());
  ASSERT_TRUE(cred.ok());
  EXPECT_EQ(cred->pid, getpid());
  EXPECT_EQ(cred->uid, geteuid());
  unlink(path.c_str());
  rmdir(dir);
}

TEST(UnixSocketTest, ConnectToMissingSocketFails) {
  auto client = ConnectSeqpacket("/nonexistent/udiag/control.sock");
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.error(), ENOENT);
}

}  // namespace
}  // namespace udiag::base
