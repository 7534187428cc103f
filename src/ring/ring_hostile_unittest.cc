// The producer owns the ring's memory and may be buggy or malicious: the
// reader must refuse bad memfds, survive any bytes in the ring (never crash,
// never read outside the mapping, never write but tail and
// consumer_sleeping), and mark the ring broken at the first impossible value.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "base/scoped_fd.h"
#include "base/tsc.h"
#include "gtest/gtest.h"
#include "ring/ring_reader.h"
#include "ring/ring_test_util.h"
#include "ring/ring_writer.h"

namespace udiag::ring {
namespace {

using base::ScopedFd;

// A memfd of `bytes` with a valid header for `data_size`, edited by `edit`,
// then sealed with `seals`.
ScopedFd MakeMemfd(size_t bytes, uint32_t data_size, int seals,
                   const std::function<void(RingHeader*)>& edit = nullptr) {
  ScopedFd fd(memfd_create("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_TRUE(fd.valid());
  EXPECT_EQ(ftruncate(fd.get(), static_cast<off_t>(bytes)), 0);
  if (bytes >= kHeaderBytes) {
    void* base = mmap(nullptr, kHeaderBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    EXPECT_NE(base, MAP_FAILED);
    auto* header = new (base) RingHeader{};
    header->magic = kRingMagic;
    header->version = kRingVersion;
    header->data_size = data_size;
    header->tid = 1;
    header->clock = static_cast<uint32_t>(ClockDomain::kTsc);
    if (edit) edit(header);
    munmap(base, kHeaderBytes);
  }
  if (seals != 0) {
    EXPECT_EQ(fcntl(fd.get(), F_ADD_SEALS, seals), 0);
  }
  return fd;
}

constexpr int kSizeSeals = F_SEAL_SHRINK | F_SEAL_GROW;

int MapError(int fd) {
  auto reader = RingReader::Map(fd);
  return reader.ok() ? 0 : reader.error();
}

TEST(RingHostileMapTest, AcceptsAWellFormedRing) {
  ScopedFd fd = MakeMemfd(kHeaderBytes + 8192, 8192, kSizeSeals);
  EXPECT_EQ(MapError(fd.get()), 0);
}

TEST(RingHostileMapTest, RefusesUnsealedMemfd) {
  ScopedFd fd = MakeMemfd(kHeaderBytes + 8192, 8192, 0);
  EXPECT_EQ(MapError(fd.get()), EPERM);
  // Why: an unsealed producer could do this under the daemon (SIGBUS).
  EXPECT_EQ(ftruncate(fd.get(), 0), 0);
}

TEST(RingHostileMapTest, RefusesPartialSeals) {
  ScopedFd shrink_only = MakeMemfd(kHeaderBytes + 8192, 8192, F_SEAL_SHRINK);
  EXPECT_EQ(MapError(shrink_only.get()), EPERM);
  ScopedFd grow_only = MakeMemfd(kHeaderBytes + 8192, 8192, F_SEAL_GROW);
  EXPECT_EQ(MapError(grow_only.get()), EPERM);
}

TEST(RingHostileMapTest, RefusesWhatIsNotAMemfd) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  ScopedFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  EXPECT_EQ(MapError(read_end.get()), EPERM);

  char path[] = "/tmp/ring_hostile_XXXXXX";
  ScopedFd file(mkstemp(path));
  ASSERT_TRUE(file.valid());
  unlink(path);
  ASSERT_EQ(ftruncate(file.get(), kHeaderBytes + 4096), 0);
  EXPECT_EQ(MapError(file.get()), EPERM);

  EXPECT_EQ(MapError(-1), EPERM);
}

TEST(RingHostileMapTest, RefusesWrongSizes) {
  for (size_t bytes : {size_t{0}, kHeaderBytes, kHeaderBytes + 2048, kHeaderBytes + 4095,
                       kHeaderBytes + 4097, kHeaderBytes + 3 * 4096, size_t{4096 + 8192 + 4096},
                       kHeaderBytes + 2 * size_t{kMaxDataSize}}) {
    ScopedFd fd = MakeMemfd(bytes, static_cast<uint32_t>(bytes - std::min(bytes, kHeaderBytes)),
                            kSizeSeals);
    EXPECT_EQ(MapError(fd.get()), EINVAL) << bytes;
  }
  // The header disagrees with the file.
  ScopedFd fd = MakeMemfd(kHeaderBytes + 8192, 4096, kSizeSeals);
  EXPECT_EQ(MapError(fd.get()), EINVAL);
}

TEST(RingHostileMapTest, RefusesWrongHeader) {
  const std::vector<std::pair<std::string, std::function<void(RingHeader*)>>> edits = {
      {"magic", [](RingHeader* h) { h->magic ^= 1; }},
      {"version", [](RingHeader* h) { h->version = 2; }},
      {"clock", [](RingHeader* h) { h->clock = 7; }},
      {"tail", [](RingHeader* h) { h->tail.store(12); }},
  };
  for (const auto& [what, edit] : edits) {
    ScopedFd fd = MakeMemfd(kHeaderBytes + 4096, 4096, kSizeSeals, edit);
    EXPECT_EQ(MapError(fd.get()), EPROTO) << what;
  }
}

TEST(RingHostileMapTest, RefusesFdItCannotMapWritable) {
  ScopedFd fd = MakeMemfd(kHeaderBytes + 4096, 4096, kSizeSeals);
  const std::string path = "/proc/self/fd/" + std::to_string(fd.get());
  ScopedFd read_only(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(read_only.valid());
  EXPECT_EQ(MapError(read_only.get()), EACCES);

  ScopedFd write_sealed = MakeMemfd(kHeaderBytes + 4096, 4096, kSizeSeals | F_SEAL_FUTURE_WRITE);
  EXPECT_EQ(MapError(write_sealed.get()), EPERM);
}

TEST(RingHostileMapTest, SealedRingCannotBeTruncatedUnderTheReader) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  EXPECT_NE(ftruncate(ring.fd(), 0), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(ftruncate(ring.fd(), kHeaderBytes), 0);
  EXPECT_NE(fcntl(ring.fd(), F_ADD_SEALS, F_SEAL_WRITE), 0) << "F_SEAL_SEAL";
  ASSERT_NE(writer.Reserve(8, 1, 0, 0), nullptr);
  writer.Commit();
  EXPECT_EQ(reader->Drain([](const RecordView&) {}, 10), 1u);
}

TEST(RingHostileTest, ReaderUnderTestIsBetweenGuardPages) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer chooses where mappings go";
#endif
  TestRing ring(4096);
  auto reader = ring.GuardedReader();
#if defined(__SANITIZE_ADDRESS__)
  // ASan's own mappings sometimes take the hole; ASan itself then catches
  // out-of-bounds reads of the ring in the tests below anyway.
  if (!ring.reader_guarded()) GTEST_SKIP() << "AddressSanitizer's mappings took the guarded hole";
#endif
  EXPECT_TRUE(ring.reader_guarded()) << "the tests below would not catch reads past the ring";
}

// A ring whose bytes a test writes directly, as a hostile producer would.
class CraftedRing {
 public:
  CraftedRing() : ring_(4096), reader_(ring_.GuardedReader()) {}

  void Put(uint64_t pos, uint32_t size, uint16_t type) {
    const RecordHeader header{size, type, 0, 0};
    std::memcpy(ring_.data() + pos, &header, std::min<uint64_t>(sizeof(header), 4096 - pos));
  }
  void SetHead(uint64_t head) { ring_.header()->head.store(head); }
  size_t Drain() { return reader_->Drain([](const RecordView&) {}, 1000); }
  RingReader& reader() { return *reader_; }
  TestRing& ring() { return ring_; }

 private:
  TestRing ring_;
  std::unique_ptr<RingReader> reader_;
};

struct BadCase {
  const char* name;
  std::function<void(CraftedRing&)> craft;
  size_t good_before;  // valid records delivered before the bad one
};

class RingHostileCraftedTest : public testing::TestWithParam<BadCase> {};

TEST_P(RingHostileCraftedTest, MarksRingBrokenForGood) {
  CraftedRing ring;
  GetParam().craft(ring);
  EXPECT_EQ(ring.Drain(), GetParam().good_before);
  EXPECT_TRUE(ring.reader().broken());
  EXPECT_TRUE(ring.reader().empty());
  // Even a ring that looks fine afterwards is not read again.
  ring.SetHead(ring.ring().header()->tail.load() + 24);
  ring.Put(ring.ring().header()->tail.load() & 4095, 24, 1);
  EXPECT_EQ(ring.Drain(), 0u);
  EXPECT_TRUE(ring.reader().broken());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RingHostileCraftedTest,
    testing::Values(
        BadCase{"SizeBelowHeader", [](CraftedRing& r) { r.Put(0, 8, 1); r.SetHead(16); }, 0},
        BadCase{"SizeZero", [](CraftedRing& r) { r.Put(0, 0, 1); r.SetHead(16); }, 0},
        BadCase{"SizeAboveMax",
                [](CraftedRing& r) { r.Put(0, 17 + kMaxPayload, 1); r.SetHead(4096); }, 0},
        BadCase{"SizeHuge", [](CraftedRing& r) { r.Put(0, 0xffffffff, 1); r.SetHead(4096); }, 0},
        BadCase{"RunsPastHead",
                [](CraftedRing& r) { r.Put(0, 24, 1); r.Put(24, 64, 1); r.SetHead(24 + 32); }, 1},
        BadCase{"CrossesEndOfData",
                [](CraftedRing& r) {
                  r.Put(0, 4000, 1);
                  r.Put(4000, 64, 1);
                  r.SetHead(4064);
                  EXPECT_EQ(r.Drain(), 2u);
                  r.Put(4064, 64, 1);
                  r.SetHead(4064 + 64);
                },
                0},
        BadCase{"RecordInLastEightBytes",
                [](CraftedRing& r) {
                  r.Put(0, 4000, 1);
                  r.Put(4000, 88, 1);
                  r.Put(4088, 16, 1);
                  r.SetHead(4096);
                },
                2},
        BadCase{"PaddingAtStart", [](CraftedRing& r) { r.Put(0, 4096, kPaddingType); r.SetHead(4096); },
                0},
        BadCase{"PaddingWrongSize",
                [](CraftedRing& r) {
                  r.Put(0, 24, 1);
                  r.Put(24, 64, kPaddingType);
                  r.SetHead(4096);
                },
                1},
        BadCase{"PaddingPastHead",
                [](CraftedRing& r) {
                  r.Put(0, 24, 1);
                  r.Put(24, 4096 - 24, kPaddingType);
                  r.SetHead(48);
                },
                1},
        BadCase{"HeadTooFarAhead",
                [](CraftedRing& r) { r.Put(0, 24, 1); r.SetHead(4096 + 8); }, 0},
        BadCase{"HeadHuge", [](CraftedRing& r) { r.SetHead(~uint64_t{0} - 7); }, 0},
        BadCase{"HeadUnaligned", [](CraftedRing& r) { r.Put(0, 24, 1); r.SetHead(20); }, 0},
        BadCase{"HeadBackwards",
                [](CraftedRing& r) {
                  r.Put(0, 24, 1);
                  r.Put(24, 24, 1);
                  r.SetHead(48);
                  EXPECT_EQ(r.Drain(), 2u);
                  r.SetHead(24);
                },
                0},
        BadCase{"HeadBackwardsBehindSnapshot",
                [](CraftedRing& r) {
                  r.Put(0, 24, 1);
                  r.SetHead(24);
                  EXPECT_EQ(r.Drain(), 1u);
                  r.SetHead(0);
                },
                0}),
    [](const testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

TEST(RingHostileTest, ForgedSharedTailIsIgnored) {
  TestRing ring(4096);
  RingWriter writer;
  writer.Attach(ring.base());
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  for (int i = 0; i < 5; ++i) {
    ASSERT_NE(writer.Reserve(8, 1, 0, i), nullptr);
    writer.Commit();
  }
  ring.header()->tail.store(0xdead'beef'0000);  // the daemon owns tail
  std::vector<uint64_t> seen;
  reader->Drain([&](const RecordView& r) { seen.push_back(r.timestamp); }, 100);
  EXPECT_EQ(seen, (std::vector<uint64_t>{0, 1, 2, 3, 4}));
  EXPECT_FALSE(reader->broken());
  EXPECT_EQ(ring.header()->tail.load(), 5u * 24);
}

// The audit's `[LOST 18397831423807001231 EVENTS]`: the lost counter is the
// producer's word, so a jump is clamped to what one thread could have lost in
// the time between two reads (one per nanosecond plus a little slack).
TEST(RingHostileTest, ForgedLostCounterIsClampedToWhatWasPossible) {
  TestRing ring(4096);
  const uint64_t mapped_ns = base::MonotonicNs();
  auto reader = ring.Reader();
  ASSERT_NE(reader, nullptr);
  ring.header()->lost.store(18397831423807001231u);
  const uint64_t lost = reader->TakeLost();
  const uint64_t elapsed_ns = base::MonotonicNs() - mapped_ns;
  EXPECT_GT(lost, 0u);
  EXPECT_LE(lost, elapsed_ns + 4096);
  // The excess is gone for good, not reported later.
  EXPECT_EQ(reader->TakeLost(), 0u);
  // Honest losses after it are counted in full.
  ring.header()->lost.store(18397831423807001231u + 7);
  EXPECT_EQ(reader->TakeLost(), 7u);
}

uint64_t Checksum(const uint8_t* p, size_t n) {
  uint64_t sum = 1469598103934665603u;
  for (size_t i = 0; i < n; ++i) sum = (sum ^ p[i]) * 1099511628211u;
  return sum;
}

// Random bytes and random heads, some plausible, many times over.
TEST(RingHostileTest, RandomGarbageNeverEscapes) {
  std::mt19937_64 rng(12345);
  size_t delivered = 0, broken = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    TestRing ring(4096);
    auto reader = ring.GuardedReader();
    ASSERT_NE(reader, nullptr);
    const auto* mapping = static_cast<const uint8_t*>(RingReaderTestPeer::Base(*reader));
    uint8_t* data = ring.data();
    for (size_t i = 0; i < 4096; i += 8) {
      const uint64_t word = rng();
      std::memcpy(data + i, &word, 8);
    }
    // Plausible record headers now and then, so that the reader goes deeper.
    for (uint64_t pos = 0; pos < 4096 && rng() % 4 != 0;) {
      const uint32_t size = 16 + static_cast<uint32_t>(rng() % 200);
      const uint16_t type = rng() % 8 == 0 ? kPaddingType : 1;
      const uint32_t put = type == kPaddingType ? static_cast<uint32_t>(4096 - pos) : size;
      std::memcpy(data + pos, &put, 4);
      std::memcpy(data + pos + 4, &type, 2);
      pos += AlignRecord(put);
    }
    for (int step = 0; step < 4; ++step) {
      const uint64_t tail = ring.header()->tail.load();
      uint64_t head;
      switch (rng() % 4) {
        case 0: head = rng(); break;
        case 1: head = tail + (rng() % 4200); break;
        default: head = tail + (rng() % 513) * 8; break;
      }
      ring.header()->head.store(head);
      const uint64_t before = Checksum(data, 4096);
      delivered += reader->Drain(
          [&](const RecordView& r) {
            ASSERT_LE(r.payload.size(), kMaxPayload);
            const auto* p = r.payload.data();
            ASSERT_TRUE(p + r.payload.size() <= mapping || p >= mapping + kHeaderBytes + 4096)
                << "view into shared memory";
            ASSERT_NE(r.type, kPaddingType);
          },
          100);
      ASSERT_EQ(Checksum(data, 4096), before) << "reader wrote the data area";
      if (reader->broken()) break;
    }
    broken += reader->broken();
  }
  // The generator must exercise both outcomes, or the test proves nothing.
  EXPECT_GT(delivered, 1000u);
  EXPECT_GT(broken, 1000u);
}

// A separate process scribbles over the whole ring while this one drains.
TEST(RingHostileTest, ConcurrentScribblerProcess) {
  TestRing ring(8192);
  auto reader = ring.GuardedReader();
  ASSERT_NE(reader, nullptr);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Plain loop, no allocation: this is a fork of a threaded test binary.
    uint64_t x = 88172645463325252u;
    auto next = [&x] {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      return x;
    };
    auto* words = static_cast<uint64_t*>(ring.base());
    const size_t count = (kHeaderBytes + 8192) / 8;
    timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
      for (int i = 0; i < 1000; ++i) {
        const uint64_t v = next();
        const size_t slot = v % count;
        // Mostly small values, so that sizes and heads look plausible.
        __atomic_store_n(&words[slot], v % 3 == 0 ? v : (v >> 40) % 300, __ATOMIC_RELAXED);
      }
      clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) * 1'000'000'000 + (now.tv_nsec - start.tv_nsec) <
             300'000'000);
    _exit(0);
  }
  size_t delivered = 0;
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) {
    delivered += reader->Drain(
        [](const RecordView& r) { ASSERT_LE(r.payload.size(), kMaxPayload); }, 1000);
    (void)reader->TakeLost();
    (void)reader->empty();
    (void)reader->closed();
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(reader->broken());
  EXPECT_EQ(reader->Drain([](const RecordView&) {}, 1000), 0u);
}

}  // namespace
}  // namespace udiag::ring
