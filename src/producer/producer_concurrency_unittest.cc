// libudiag under concurrency: writer threads on one data file while the
// agent thread flips their enable bits and other threads register and
// unregister. Run under ThreadSanitizer by `make test` (label concurrency).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "consumer/consumer_client.h"
#include "consumer/private_daemon.h"
#include "udiag/udiag.h"

namespace {

struct Event {
  uint32_t enabled = 0;
  uint32_t index = 0;
};

int Register(int fd, const char* command, Event* event) {
  user_reg reg{};
  reg.size = sizeof(reg);
  reg.enable_bit = 0;
  reg.enable_size = 4;
  reg.enable_addr = reinterpret_cast<uintptr_t>(&event->enabled);
  reg.name_args = reinterpret_cast<uintptr_t>(command);
  if (udiag_ioctl(fd, DIAG_IOCSREG, &reg) < 0) return errno;
  event->index = reg.write_index;
  return 0;
}

TEST(ProducerConcurrencyTest, WritersRaceEnableFlipsAndRegistrations) {
  std::string error;
  auto daemon = udiag::consumer::PrivateDaemon::Start(&error);
  ASSERT_TRUE(daemon) << error;
  setenv("UDIAG_DIR", daemon->dir().c_str(), 1);
  auto consumer = udiag::consumer::ConsumerClient::Connect(daemon->dir());
  ASSERT_TRUE(consumer.ok());

  int fd = udiag_open();
  ASSERT_GE(fd, 0) << strerror(errno);
  Event hot;
  ASSERT_EQ(Register(fd, "race_hot u64 seq", &hot), 0);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> written{0}, refused{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&] {
      for (uint64_t seq = 0; !stop.load(std::memory_order_relaxed); ++seq) {
        if (!(__atomic_load_n(&hot.enabled, __ATOMIC_RELAXED) & 1)) continue;
        struct {
          uint32_t index;
          uint64_t seq;
        } __attribute__((packed)) ev{hot.index, seq};
        if (udiag_write(fd, &ev, sizeof(ev)) == sizeof(ev)) {
          written.fetch_add(1, std::memory_order_relaxed);
        } else {
          EXPECT_EQ(errno, EBADF);  // disabled between the check and the write
          refused.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  // Registrations on the same data file while the writers run.
  std::thread registrar([&] {
    for (int i = 0; i < 50; ++i) {
      Event other;
      std::string command = "race_other" + std::to_string(i % 5) + " u32 x";
      ASSERT_EQ(Register(fd, command.c_str(), &other), 0);
      user_unreg unreg{};
      unreg.size = sizeof(unreg);
      unreg.disable_addr = reinterpret_cast<uintptr_t>(&other.enabled);
      ASSERT_EQ(udiag_ioctl(fd, DIAG_IOCSUNREG, &unreg), 0);
    }
  });
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(consumer->Write("events/user_events/race_hot/enable", i % 2 ? "0" : "1", false), 0);
    // The write returns once the agent applied the bit.
    EXPECT_EQ(__atomic_load_n(&hot.enabled, __ATOMIC_RELAXED) & 1, i % 2 ? 0u : 1u);
    usleep(2000);
  }
  registrar.join();
  stop = true;
  for (auto& w : writers) w.join();
  EXPECT_GT(written.load(), 0u);
  udiag_close(fd);
}

}  // namespace
