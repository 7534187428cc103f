// The stream ring between two threads, as between the daemon and a recorder.
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include <gtest/gtest.h>

#include "ipc/stream_ring.h"
#include "ipc/stream_ring_test_util.h"

namespace udiag::ipc {
namespace {

using testing_util::MakePair;
using testing_util::Pair;

// A writer and a reader thread, each sleeping on a pipe until poked, move
// 64 MiB through a 1 MiB ring in odd-sized pieces, in order.
TEST(StreamRingTest, ThreadsPassEveryByteInOrder) {
  Pair p = MakePair();
  int to_reader[2], to_writer[2];
  ASSERT_EQ(pipe(to_reader), 0);
  ASSERT_EQ(pipe(to_writer), 0);
  constexpr uint64_t kTotal = 64 << 20;
  auto wait_for_poke = [](int fd) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, 100) > 0) {
      char c;
      (void)!read(fd, &c, 1);
    }
  };
  std::thread writer([&] {
    uint64_t written = 0, piece = 1;
    while (written < kTotal) {
      piece = piece * 7 % 70001 + 1;
      const uint64_t n = std::min(piece, kTotal - written);
      uint64_t room = p.writer->Writable();
      if (room < n) room = p.writer->WaitForRoom();
      if (room < n) {
        wait_for_poke(to_writer[0]);
        continue;
      }
      uint8_t* at = p.writer->write_position();
      for (uint64_t i = 0; i < n; ++i) at[i] = static_cast<uint8_t>((written + i) * 131 >> 3);
      if (p.writer->Publish(n)) (void)!write(to_reader[1], "w", 1);
      written += n;
    }
  });
  uint64_t read_bytes = 0, wrong = 0;
  while (read_bytes < kTotal) {
    std::span<const uint8_t> bytes = p.reader->Readable();
    if (bytes.empty()) {
      if (!p.reader->SleepUnlessReadable(1)) wait_for_poke(to_reader[0]);
      p.reader->Awake();
      continue;
    }
    for (uint64_t i = 0; i < bytes.size(); ++i) wrong += bytes[i] != static_cast<uint8_t>((read_bytes + i) * 131 >> 3);
    read_bytes += bytes.size();
    if (p.reader->Release(bytes.size())) (void)!write(to_writer[1], "r", 1);
  }
  writer.join();
  EXPECT_EQ(wrong, 0u);
  EXPECT_FALSE(p.writer->broken());
  for (int fd : {to_reader[0], to_reader[1], to_writer[0], to_writer[1]}) close(fd);
}

}  // namespace
}  // namespace udiag::ipc
