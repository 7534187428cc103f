// The control socket is untrusted input too: a client that sends random
// messages (random types, bodies, truncations, stray fds) must not crash or
// wedge the daemon, and well-behaved clients keep being served.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>
#include <vector>

#include "base/daemon_dir.h"
#include "base/unix_socket.h"
#include "consumer/private_daemon.h"
#include "integration_util.h"
#include "ipc/protocol.h"

namespace udiag::integration {
namespace {

// A whole header (so the message reaches a handler) with a real message type
// and a random body, or random bytes of any length one time in ten.
std::vector<uint8_t> RandomMessage(std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  bool framed = std::uniform_int_distribution<int>(0, 9)(rng) != 0;
  size_t size = framed ? std::uniform_int_distribution<size_t>(sizeof(ipc::MessageHeader), 300)(rng)
                       : std::uniform_int_distribution<size_t>(sizeof(ipc::MessageHeader), 64)(rng);
  std::vector<uint8_t> msg(size);
  for (auto& b : msg) b = byte(rng);
  if (framed) {
    static const uint32_t kTypes[] = {1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 30, 31, 32, 33, 34, 100, 101, 102};
    uint32_t type = kTypes[std::uniform_int_distribution<size_t>(0, std::size(kTypes) - 1)(rng)];
    std::memcpy(msg.data(), &type, sizeof(type));
  }
  return msg;
}

// Reads whatever the daemon answers until it hangs up; returns the count.
int DrainUntilHangup(int fd) {
  std::vector<uint8_t> bytes;
  std::vector<base::ScopedFd> fds;
  int replies = 0;
  while (base::ReceiveMessage(fd, &bytes, &fds) == 0) ++replies;
  return replies;
}

TEST(HostileClientTest, RandomMessagesDoNotHurtTheDaemon) {
  std::string error;
  auto daemon = consumer::PrivateDaemon::Start(&error);
  ASSERT_TRUE(daemon) << error;
  std::mt19937 rng(12345);
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  for (int client = 0; client < 20; ++client) {
    auto fd = base::ConnectSeqpacket(base::ControlSocketPath(daemon->dir()));
    ASSERT_TRUE(fd.ok());
    // Half the clients greet properly first (as a producer or a consumer).
    bool greeted = client % 2 == 0;
    if (greeted) {
      ipc::Encoder hello = ipc::StartMessage(ipc::MsgType::kHello, 1);
      ipc::Hello{ipc::kProtocolVersion, client % 4 == 0 ? ipc::Role::kProducer : ipc::Role::kConsumer, 0}.Encode(hello);
      ASSERT_EQ(base::SendMessage(fd->get(), hello.bytes()), 0);
    }
    for (int i = 0; i < 500; ++i) {
      std::vector<uint8_t> msg = RandomMessage(rng);
      std::vector<int> fds;
      if (i % 7 == 0) fds.push_back(devnull);  // a stray fd that is not a data file or ring
      if (base::SendMessage(fd->get(), msg, fds) != 0) break;
    }
    // A message shorter than a header makes the daemon hang up: once we see
    // that, it has handled everything before it.
    const uint8_t runt[3] = {1, 2, 3};
    base::SendMessage(fd->get(), runt);
    EXPECT_GT(DrainUntilHangup(fd->get()), 0);
  }
  close(devnull);
  // Still alive and serving.
  ASSERT_TRUE(ProcessRunning(daemon->pid()));
  auto consumer = consumer::ConsumerClient::Connect(daemon->dir());
  ASSERT_TRUE(consumer.ok()) << consumer.error();
  auto status = consumer->Read("user_events_status");
  ASSERT_TRUE(status.ok()) << status.error();
  int code = WaitExit(StartProcess({Bin("example_c"), "3"}, {.udiag_dir = daemon->dir()}));
  EXPECT_EQ(code, 0);
}

}  // namespace
}  // namespace udiag::integration
