#include "consumer/private_daemon.h"

#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>

#include <gtest/gtest.h>

#include "consumer/consumer_client.h"

namespace udiag::consumer {
namespace {

TEST(PrivateDaemonTest, ServesAFreshPrivateDirectory) {
  std::string error;
  auto daemon = PrivateDaemon::Start(&error);
  ASSERT_NE(daemon, nullptr) << error;
  struct stat st;
  ASSERT_EQ(stat(daemon->dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(ConsumerClient::Connect(daemon->dir()).ok());
}

TEST(PrivateDaemonTest, TwoDaemonsDoNotShareADirectory) {
  std::string error;
  auto first = PrivateDaemon::Start(&error);
  auto second = PrivateDaemon::Start(&error);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_NE(first->dir(), second->dir());
}

TEST(PrivateDaemonTest, DestructionStopsTheDaemonAndRemovesItsDirectory) {
  std::string error;
  auto daemon = PrivateDaemon::Start(&error);
  ASSERT_NE(daemon, nullptr) << error;
  std::string dir = daemon->dir();
  pid_t pid = daemon->pid();
  daemon.reset();
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_EQ(kill(pid, 0), -1);  // reaped, not a zombie
  EXPECT_EQ(errno, ESRCH);
}

}  // namespace
}  // namespace udiag::consumer
