// The checks udiag_writev makes of its arguments before it looks at the
// event: writev's own errors, in writev's order, with no daemon involved.
// Then, with a daemon, the fast path that writes a thread's last event
// again without looking it up: what it remembers must never outlive what
// it stands for.
#include <gtest/gtest.h>
#include <limits.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "producer/daemon_test_fixture.h"
#include "producer/thread_ring.h"
#include "udiag/udiag.h"

namespace {

constexpr int kNoSuchFd = 1 << 20;

ssize_t WriteV(const iovec* iov, int count) {
  errno = 0;
  return udiag_writev(kNoSuchFd, iov, count);
}

TEST(WritePathTest, ACountOutsideZeroToIovMaxIsEinval) {
  int32_t index = 0;
  iovec iov[1] = {{&index, sizeof(index)}};
  EXPECT_EQ(WriteV(iov, -1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(WriteV(iov, IOV_MAX + 1), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST(WritePathTest, LengthsSummingPastSsizeMaxAreEinval) {
  int32_t index = 0;
  // Never read: the sum is refused first.
  iovec apart[2] = {{&index, sizeof(index)}, {&index, SSIZE_MAX}};
  EXPECT_EQ(WriteV(apart, 2), -1);
  EXPECT_EQ(errno, EINVAL);
  iovec three[3] = {{&index, SSIZE_MAX / 2 + 1}, {&index, SSIZE_MAX / 2 + 1}, {&index, 0}};
  EXPECT_EQ(WriteV(three, 3), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST(WritePathTest, FewerBytesThanAnIndexAreEfault) {
  uint8_t bytes[3] = {};
  iovec none[1] = {{bytes, 0}};
  EXPECT_EQ(WriteV(none, 0), -1);
  EXPECT_EQ(errno, EFAULT);
  iovec split[2] = {{bytes, 2}, {bytes, 1}};
  EXPECT_EQ(WriteV(split, 2), -1);
  EXPECT_EQ(errno, EFAULT);
}

TEST(WritePathTest, ANegativeIndexIsEinvalWhereverItsBytesAre) {
  const int32_t index = -1;
  const auto* bytes = reinterpret_cast<const uint8_t*>(&index);
  uint64_t payload = 0;
  iovec apart[2] = {{const_cast<int32_t*>(&index), sizeof(index)}, {&payload, sizeof(payload)}};
  EXPECT_EQ(WriteV(apart, 2), -1);
  EXPECT_EQ(errno, EINVAL);
  iovec split[3] = {{const_cast<uint8_t*>(bytes), 1}, {const_cast<uint8_t*>(bytes) + 1, 3}, {&payload, 8}};
  EXPECT_EQ(WriteV(split, 3), -1);
  EXPECT_EQ(errno, EINVAL);
}

class WritePathWithDaemonTest : public udiag::producer::DaemonTest {
 protected:
  // Registers `command` on `fd` and enables it; its write index.
  int32_t RegisterEnabled(int fd, const std::string& command) {
    user_reg reg{};
    reg.size = sizeof(reg);
    reg.enable_bit = next_enable_bit_++;  // one (address, bit) per registration
    reg.enable_size = 4;
    reg.enable_addr = reinterpret_cast<uintptr_t>(&enabled_word_);
    reg.name_args = reinterpret_cast<uintptr_t>(command.c_str());
    EXPECT_EQ(udiag_ioctl(fd, DIAG_IOCSREG, &reg), 0) << strerror(errno);
    SetEnabled(command.substr(0, command.find(' ')), true);
    return static_cast<int32_t>(reg.write_index);
  }

  // [index][payload] through udiag_writev.
  template <typename T>
  ssize_t WriteApart(int fd, int32_t index, T payload) {
    iovec iov[2] = {{&index, sizeof(index)}, {&payload, sizeof(payload)}};
    errno = 0;
    return udiag_writev(fd, iov, 2);
  }
  // [index+payload] through udiag_write.
  template <typename T>
  ssize_t WriteTogether(int fd, int32_t index, T payload) {
    struct __attribute__((packed)) {
      int32_t index;
      T payload;
    } event{index, payload};
    errno = 0;
    return udiag_write(fd, &event, sizeof(event));
  }

  std::string Trace() {
    auto trace = consumer_->Read("trace");
    EXPECT_TRUE(trace.ok());
    return trace.ok() ? *trace : "";
  }

  // Enablers belong to the process, not to a file: each test's are new.
  static inline uint32_t enabled_word_ = 0;
  static inline uint8_t next_enable_bit_ = 0;
};

// An integer field as `trace` prints it.
std::string IntegerField(const std::string& field, uint64_t value) {
  char hex[32];
  snprintf(hex, sizeof(hex), "%llx", static_cast<unsigned long long>(value));
  return field + "=0x" + hex + " (" + std::to_string(value) + ")";
}

// A trace line's event and its one integer field.
std::string Shown(const std::string& event, const std::string& field, uint64_t value) {
  return event + ": " + IntegerField(field, value) + "\n";
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A descriptor closed and opened again gets the same number, and the new
// file's first event the same index: the write must be the new event's.
TEST_F(WritePathWithDaemonTest, AReopenedFileIsNotTakenForTheOneItReplaced) {
  const int first = udiag_open();
  ASSERT_GE(first, 0) << strerror(errno);
  const int32_t old_index = RegisterEnabled(first, "wp_old u32 a");
  ASSERT_EQ(WriteApart<uint32_t>(first, old_index, 7), 8);
  ASSERT_EQ(WriteApart<uint32_t>(first, old_index, 8), 8);
  ASSERT_EQ(udiag_close(first), 0);

  const int second = udiag_open();
  ASSERT_EQ(second, first) << "the case needs the descriptor number reused";
  const int32_t new_index = RegisterEnabled(second, "wp_new u64 b");
  ASSERT_EQ(new_index, old_index) << "the case needs the write index reused";
  ASSERT_EQ(WriteApart<uint64_t>(second, new_index, 9), 12);
  ASSERT_EQ(WriteTogether<uint64_t>(second, new_index, 10), 12);

  const std::string trace = Trace();
  EXPECT_EQ(Count(trace, Shown("wp_old", "a", 7)), 1u) << trace;
  EXPECT_EQ(Count(trace, Shown("wp_old", "a", 8)), 1u) << trace;
  EXPECT_EQ(Count(trace, Shown("wp_new", "b", 9)), 1u) << trace;
  EXPECT_EQ(Count(trace, Shown("wp_new", "b", 10)), 1u) << trace;
  EXPECT_EQ(Count(trace, "wp_old"), 2u) << trace;
  udiag_close(second);
}

TEST_F(WritePathWithDaemonTest, AnEventDisabledAfterItsWritesIsRefused) {
  const int fd = udiag_open();
  ASSERT_GE(fd, 0) << strerror(errno);
  const int32_t index = RegisterEnabled(fd, "wp_toggled u32 a");
  ASSERT_EQ(WriteApart<uint32_t>(fd, index, 1), 8);
  ASSERT_EQ(WriteTogether<uint32_t>(fd, index, 2), 8);
  SetEnabled("wp_toggled", false);
  EXPECT_EQ(WriteApart<uint32_t>(fd, index, 3), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(WriteTogether<uint32_t>(fd, index, 4), -1);
  EXPECT_EQ(errno, EBADF);
  SetEnabled("wp_toggled", true);
  EXPECT_EQ(WriteApart<uint32_t>(fd, index, 5), 8);
  const std::string trace = Trace();
  EXPECT_EQ(Count(trace, "wp_toggled:"), 3u) << trace;
  EXPECT_EQ(Count(trace, Shown("wp_toggled", "a", 3)), 0u) << trace;
  udiag_close(fd);
}

TEST_F(WritePathWithDaemonTest, APayloadShorterThanItsEventIsEinvalAfterWritesOfIt) {
  const int fd = udiag_open();
  ASSERT_GE(fd, 0) << strerror(errno);
  const int32_t index = RegisterEnabled(fd, "wp_sized u64 a");
  ASSERT_EQ(WriteApart<uint64_t>(fd, index, 1), 12);
  EXPECT_EQ(WriteApart<uint32_t>(fd, index, 2), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(WriteTogether<uint32_t>(fd, index, 3), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(WriteTogether<uint64_t>(fd, index, 4), 12);
  const std::string trace = Trace();
  EXPECT_EQ(Count(trace, "wp_sized:"), 2u) << trace;
  udiag_close(fd);
}

// Two data files with three events each, written in turn through both
// shapes: more events than a thread remembers, and the same write indices
// on both files, whose descriptors are remembered in the same slots.
TEST_F(WritePathWithDaemonTest, EventsWrittenInTurnKeepTheirOwnIds) {
  std::vector<int> opened;
  int files[2] = {-1, -1};
  while (files[1] < 0 && opened.size() < 8) {
    const int fd = udiag_open();
    ASSERT_GE(fd, 0) << strerror(errno);
    opened.push_back(fd);
    if (files[0] < 0) {
      files[0] = fd;
    } else if ((fd - files[0]) % udiag::producer::ThreadRing::kRememberedEvents == 0) {
      files[1] = fd;
    }
  }
  ASSERT_GE(files[1], 0) << "the case needs two descriptors remembered in the same slots";
  struct Written {
    int fd;
    int32_t index;
    std::string name;
  };
  std::vector<Written> events;
  for (int f = 0; f < 2; ++f) {
    for (int e = 0; e < 3; ++e) {
      const std::string name = "wp_turn_" + std::to_string(f) + "_" + std::to_string(e);
      events.push_back({files[f], RegisterEnabled(files[f], name + " u32 n"), name});
    }
  }
  ASSERT_EQ(events[0].index, events[3].index) << "the case needs the same indices on both files";
  for (uint32_t n = 0; n < 120; ++n) {
    const Written& event = events[n % events.size()];
    ASSERT_EQ(n % 4 ? WriteApart<uint32_t>(event.fd, event.index, n)
                    : WriteTogether<uint32_t>(event.fd, event.index, n),
              8);
  }
  const std::string trace = Trace();
  for (uint32_t n = 0; n < 120; ++n) {
    const std::string line = Shown(events[n % events.size()].name, "n", n);
    EXPECT_EQ(Count(trace, line), 1u) << line << trace;
  }
  for (int fd : opened) udiag_close(fd);
}

// An event "u32 n; __rel_loc char[] s" (or __data_loc, with `loc_at` 16:
// the string's offset from the common header): [index][n][loc] and then
// `s` and its NUL.
struct StringEvent {
  StringEvent(int32_t index, uint32_t n, const std::string& s, uint32_t loc_at = 0)
      : fixed{static_cast<uint32_t>(index), n, static_cast<uint32_t>(s.size() + 1) << 16 | loc_at}, text(s) {}
  // A __rel_loc word saying `s_size` bytes, whatever `s` is.
  static StringEvent Claiming(uint32_t s_size, int32_t index, uint32_t n, const std::string& s) {
    StringEvent event(index, n, s);
    event.fixed[2] = s_size << 16;
    return event;
  }
  uint32_t fixed[3];
  std::string text;  // the NUL that c_str() holds after it is written too

  // The C++ API's shape: the fixed part, the string, its NUL.
  ssize_t WriteAsCppDoes(int fd) const {
    static const char kNul = '\0';
    iovec iov[3] = {{const_cast<uint32_t*>(fixed), sizeof(fixed)},
                    {const_cast<char*>(text.data()), text.size()},
                    {const_cast<char*>(&kNul), 1}};
    errno = 0;
    return udiag_writev(fd, iov, 3);
  }
  // One buffer, [index+payload].
  ssize_t WriteTogether(int fd) const {
    std::string bytes(reinterpret_cast<const char*>(fixed), sizeof(fixed));
    bytes.append(text.c_str(), text.size() + 1);
    errno = 0;
    return udiag_write(fd, bytes.data(), bytes.size());
  }
  // The index, then a byte an iovec, `count` iovecs in all (the rest of
  // the bytes in the last); count - 1 <= the payload's bytes.
  ssize_t WriteInPieces(int fd, int count) const {
    std::string bytes(reinterpret_cast<const char*>(fixed) + 4, sizeof(fixed) - 4);
    bytes.append(text.c_str(), text.size() + 1);
    std::vector<iovec> iov{{const_cast<uint32_t*>(fixed), 4}};
    for (int i = 0; i + 2 < count; ++i) iov.push_back({&bytes[i], 1});
    iov.push_back({&bytes[count - 2], bytes.size() - (count - 2)});
    errno = 0;
    return udiag_writev(fd, iov.data(), static_cast<int>(iov.size()));
  }
  ssize_t size() const { return static_cast<ssize_t>(sizeof(fixed) + text.size() + 1); }
};

// Of several lengths, and long enough for twenty pieces.
std::string Text(uint32_t n) { return "text-" + std::string(n % 17, 'x') + std::to_string(n) + "-in-pieces"; }

// Events with strings take the same short way once written (their shapes
// have three iovecs or more): every string must come out whole.
TEST_F(WritePathWithDaemonTest, StringEventsComeOutWholeInEveryShape) {
  const int fd = udiag_open();
  ASSERT_GE(fd, 0) << strerror(errno);
  struct Case {
    std::string name, loc;
    uint32_t loc_at;
  };
  for (const Case& c : {Case{"wp_rel_string", "__rel_loc", 0}, Case{"wp_data_string", "__data_loc", 16}}) {
    const int32_t index = RegisterEnabled(fd, c.name + " u32 n; " + c.loc + " char[] s");
    for (uint32_t n = 0; n < 60; ++n) {
      const StringEvent event(index, n, Text(n), c.loc_at);
      const ssize_t written = n % 3 == 0   ? event.WriteAsCppDoes(fd)
                              : n % 3 == 1 ? event.WriteTogether(fd)
                                           : event.WriteInPieces(fd, n % 2 ? 5 : 20);
      ASSERT_EQ(written, event.size()) << c.name << " " << n << ": " << strerror(errno);
    }
  }
  const std::string trace = Trace();
  for (const char* name : {"wp_rel_string", "wp_data_string"}) {
    for (uint32_t n = 0; n < 60; ++n) {
      const std::string line = std::string(name) + ": " + IntegerField("n", n) + " s=" + Text(n) + "\n";
      EXPECT_EQ(Count(trace, line), 1u) << line << trace;
    }
  }
  udiag_close(fd);
}

// A loc word that points past the record, or at a string without its NUL,
// is EFAULT and writes nothing, however often the event was written
// before and whatever the shape.
TEST_F(WritePathWithDaemonTest, ABadLocAfterWritesOfItsEventIsEfault) {
  const int fd = udiag_open();
  ASSERT_GE(fd, 0) << strerror(errno);
  const int32_t index = RegisterEnabled(fd, "wp_loc u32 n; __rel_loc char[] s");
  const StringEvent good(index, 1, "good");
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(good.WriteAsCppDoes(fd), good.size()) << strerror(errno);
    ASSERT_EQ(good.WriteTogether(fd), good.size()) << strerror(errno);
  }
  const StringEvent past_end = StringEvent::Claiming(9, index, 2, "long");
  const StringEvent no_nul = StringEvent::Claiming(5, index, 3, "nonul");
  for (const StringEvent* bad : {&past_end, &no_nul}) {
    EXPECT_EQ(bad->WriteAsCppDoes(fd), -1);
    EXPECT_EQ(errno, EFAULT);
    EXPECT_EQ(bad->WriteTogether(fd), -1);
    EXPECT_EQ(errno, EFAULT);
  }
  ASSERT_EQ(good.WriteAsCppDoes(fd), good.size()) << strerror(errno);
  const std::string trace = Trace();
  EXPECT_EQ(Count(trace, "wp_loc: n=0x1 (1) s=good\n"), 7u) << trace;
  EXPECT_EQ(Count(trace, "wp_loc:"), 7u) << trace;
  udiag_close(fd);
}

// Lengths whose sum wraps around to a plausible size must not be taken for
// the event written before: EINVAL, as for any write.
TEST_F(WritePathWithDaemonTest, LengthsSummingPastSsizeMaxAreEinvalAfterWritesOfTheEvent) {
  const int fd = udiag_open();
  ASSERT_GE(fd, 0) << strerror(errno);
  const int32_t index = RegisterEnabled(fd, "wp_wrap u32 n; __rel_loc char[] s");
  const StringEvent good(index, 1, "good");
  ASSERT_EQ(good.WriteAsCppDoes(fd), good.size()) << strerror(errno);
  ASSERT_EQ(good.WriteAsCppDoes(fd), good.size()) << strerror(errno);
  char bytes[8] = {};
  iovec wrapping[3] = {
      {const_cast<uint32_t*>(good.fixed), sizeof(good.fixed)}, {bytes, SIZE_MAX - 1}, {bytes, 8}};
  EXPECT_EQ(udiag_writev(fd, wrapping, 3), -1);
  EXPECT_EQ(errno, EINVAL);
  udiag_close(fd);
}

}  // namespace
