// The producer owns the ring's memory and may be buggy or malicious: the
// reader must refuse bad memfds, survive any bytes in the ring (never crash,
// never read outside the mapping, never write but tail and
// consumer_sleeping), and mark the ring broken at the first impossible value.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
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
  auto reader = RingReader::Map(fd, base::MonotonicNs());
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
      {"version 1", [](RingHeader* h) { h->version = 1; }},  // the byte ring of records before pages
      {"version 3", [](RingHeader* h) { h->version = 3; }},
      {"clock", [](RingHeader* h) { h->clock = 7; }},
      // The tail must be at a page's start.
      {"tail 12", [](RingHeader* h) { h->tail.store(12); }},
      {"tail 16", [](RingHeader* h) { h->tail.store(16); }},
      {"tail at an event", [](RingHeader* h) { h->tail.store(4096 + 20); }},
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

// A ring whose bytes a test writes directly, as a hostile producer would:
// two pages, the second ending at the reader's guard page. Positions are
// byte-stream positions (page 0's events start at 16).
class CraftedRing {
 public:
  CraftedRing() : ring_(8192), reader_(ring_.GuardedReader()) {}

  // The header of the page at `page`, with `bytes` of events (0: open).
  void Page(uint64_t page, uint32_t bytes, uint16_t cpu = 0, uint64_t timestamp = 0) {
    ring_.Put(page, PageHeader{timestamp, bytes | uint64_t{cpu} << 32});
  }
  void Word(uint64_t pos, uint32_t word) { ring_.Put(pos, word); }
  // A well-formed event of `type` at `pos` with `data_bytes` of data (a
  // multiple of 4, 8 or more); returns where it ends.
  uint64_t Event(uint64_t pos, uint32_t data_bytes, uint16_t type = 1) {
    if (data_bytes <= kMaxSmallData) {
      Word(pos, EventWord(data_bytes / 4, 0));
      pos += 4;
    } else {
      Word(pos, EventWord(0, 0));
      Word(pos + 4, data_bytes + 4);
      pos += 8;
    }
    ring_.Put(pos, CommonHeader{type, 0, 0, 1});
    return pos + data_bytes;
  }
  void SetHead(uint64_t head) { ring_.header()->head.store(head); }
  size_t Drain() { return reader_->Drain([](const RecordView&) {}, 1000); }
  RingReader& reader() { return *reader_; }
  TestRing& ring() { return ring_; }

 private:
  TestRing ring_;
  std::unique_ptr<RingReader> reader_;
};

// Page 0 closed with one event, page 1 closed and full with two events up
// to its last word, which is left to the caller: returns its position.
uint64_t ThreeEventsUpToTheLastWord(CraftedRing& r) {
  r.Page(0, 20);
  r.Event(16, 16);
  r.Page(4096, kPageDataBytes);
  const uint64_t last = r.Event(r.Event(4096 + 16, 2036), 2024);
  EXPECT_EQ(last, 8192u - 4);
  r.SetHead(8192);
  return last;
}

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
  const uint64_t page =
      (ring.ring().header()->tail.load() + kRingPageSize - 1) & ~uint64_t{kRingPageSize - 1};
  ring.Page(page, 0);
  ring.SetHead(ring.Event(page + 16, 16));
  EXPECT_EQ(ring.Drain(), 0u);
  EXPECT_TRUE(ring.reader().broken());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RingHostileCraftedTest,
    testing::Values(
        // Events.
        BadCase{"DataBelowCommonHeader",
                [](CraftedRing& r) {
                  r.Word(16, EventWord(1, 0));
                  r.SetHead(24);
                },
                0},
        BadCase{"ExplicitDataBelowCommonHeader",
                [](CraftedRing& r) {
                  r.Word(16, EventWord(0, 0));
                  r.Word(20, 8);
                  r.SetHead(28);
                },
                0},
        BadCase{"ExplicitLengthZero",
                [](CraftedRing& r) {
                  r.Word(16, EventWord(0, 0));
                  r.SetHead(80);
                },
                0},
        BadCase{"ExplicitLengthUnaligned",
                [](CraftedRing& r) {
                  r.Word(16, EventWord(0, 0));
                  r.Word(20, 18);
                  r.SetHead(80);
                },
                0},
        BadCase{"ExplicitLengthTooLong",
                [](CraftedRing& r) {
                  r.Page(0, kPageDataBytes);
                  r.Word(16, EventWord(0, 0));
                  r.Word(20, kPageDataBytes + 4);
                  r.SetHead(4096);
                },
                0},
        BadCase{"ExplicitLengthHuge",
                [](CraftedRing& r) {
                  r.Page(0, kPageDataBytes);
                  r.Word(16, EventWord(0, 0));
                  r.Word(20, 0xffffffff);
                  r.SetHead(4096);
                },
                0},
        BadCase{"PayloadAboveMax",
                [](CraftedRing& r) {
                  r.Page(0, kPageDataBytes);
                  r.Event(16, kCommonHeaderBytes + kMaxPayload + 4);
                  r.SetHead(4096);
                },
                0},
        BadCase{"TypeLen29Padding",
                [](CraftedRing& r) {
                  r.Word(16, EventWord(29, 0));
                  r.SetHead(80);
                },
                0},
        BadCase{"TypeLen31AbsoluteTime",
                [](CraftedRing& r) {
                  r.Word(16, EventWord(31, 0));
                  r.SetHead(80);
                },
                0},
        BadCase{"EventCrossesHead",
                [](CraftedRing& r) {
                  r.Event(r.Event(16, 16), 64);
                  r.SetHead(36 + 32);
                },
                1},
        BadCase{"EventCrossesCommit",
                [](CraftedRing& r) {
                  r.Page(0, 32);
                  r.Event(r.Event(16, 16), 16);
                  r.SetHead(4096);
                },
                1},
        BadCase{"TimeExtendCrossesHead",
                [](CraftedRing& r) {
                  r.Word(16, EventWord(kTypeTimeExtend, 5));
                  r.SetHead(20);
                },
                0},
        BadCase{"LengthWordPastPageEnd",
                [](CraftedRing& r) { r.Word(ThreeEventsUpToTheLastWord(r), EventWord(0, 0)); }, 3},
        BadCase{"TimeExtendPastPageEnd",
                [](CraftedRing& r) { r.Word(ThreeEventsUpToTheLastWord(r), EventWord(kTypeTimeExtend, 0)); },
                3},
        BadCase{"SmallEventPastPageEnd",
                [](CraftedRing& r) { r.Word(ThreeEventsUpToTheLastWord(r), EventWord(2, 0)); }, 3},
        // Commit words.
        BadCase{"CommitAboveDataBytes",
                [](CraftedRing& r) {
                  r.Page(0, kPageDataBytes + 4);
                  r.Event(16, 16);
                  r.SetHead(4096);
                },
                0},
        BadCase{"CommitHuge",
                [](CraftedRing& r) {
                  r.Page(0, 0xffffffff, 0xffff);
                  r.Event(16, 16);
                  r.SetHead(4096);
                },
                0},
        BadCase{"CommitBehindTheReader",
                [](CraftedRing& r) {
                  r.SetHead(r.Event(r.Event(16, 16), 16));
                  EXPECT_EQ(r.Drain(), 2u);
                  r.Page(0, 20);
                  r.SetHead(4096);
                },
                0},
        // Heads.
        BadCase{"HeadInPageHeader",
                [](CraftedRing& r) {
                  r.Event(16, 16);
                  r.SetHead(8);
                },
                0},
        BadCase{"HeadRightAfterPageHeader",
                [](CraftedRing& r) {
                  r.Event(16, 16);
                  r.SetHead(16);
                },
                0},
        BadCase{"HeadUnaligned",
                [](CraftedRing& r) {
                  r.Event(16, 16);
                  r.SetHead(34);
                },
                0},
        BadCase{"HeadInNextPageHeader",
                [](CraftedRing& r) {
                  r.SetHead(r.Event(16, 16));
                  EXPECT_EQ(r.Drain(), 1u);
                  r.Page(0, 20);
                  r.SetHead(4096 + 8);
                },
                0},
        BadCase{"HeadBeyondTailPlusSize",
                [](CraftedRing& r) {
                  r.Page(0, 20);
                  r.Event(16, 16);
                  r.SetHead(8192 + 20);
                },
                0},
        BadCase{"HeadAPageBeyondTailPlusSize",
                [](CraftedRing& r) {
                  r.Page(0, 20);
                  r.Event(16, 16);
                  r.SetHead(8192 + 4096);
                },
                0},
        BadCase{"HeadHuge", [](CraftedRing& r) { r.SetHead(~uint64_t{0} - 7); }, 0},
        BadCase{"HeadBackwards",
                [](CraftedRing& r) {
                  r.SetHead(r.Event(r.Event(16, 16), 16));
                  EXPECT_EQ(r.Drain(), 2u);
                  r.SetHead(36);
                },
                0},
        BadCase{"HeadBackwardsBehindSnapshot",
                [](CraftedRing& r) {
                  r.SetHead(r.Event(16, 16));
                  EXPECT_EQ(r.Drain(), 1u);
                  r.SetHead(0);
                },
                0},
        BadCase{"HeadBackwardsToAnEarlierPage",
                [](CraftedRing& r) {
                  r.Page(0, 20);
                  r.Event(16, 16);
                  r.SetHead(r.Event(4096 + 16, 16));
                  EXPECT_EQ(r.Drain(), 2u);
                  r.SetHead(36);
                },
                0}),
    [](const testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

// The controls of the cases above: a ring at the limits they cross is read.
TEST(RingHostileTest, CraftedPagesAtTheLimitsAreRead) {
  CraftedRing ring;
  ring.Page(0, kPageDataBytes, 7, 1000);
  // The largest payload, then a time extend in the lost-count room: the
  // writer leaves it free, but a page may use it.
  const uint64_t pos = ring.Event(16, kCommonHeaderBytes + kMaxPayload, 11);
  ring.Word(pos, EventWord(kTypeTimeExtend, 5));
  ring.Word(pos + 4, 3);
  ASSERT_EQ(pos + 8, 4096u);
  // Page 1's events end with the mapping.
  ring.Page(4096, kPageDataBytes, 8, 2000);
  ASSERT_EQ(ring.Event(ring.Event(4096 + 16, 2036, 12), 2028, 13), 8192u);
  ring.SetHead(8192);
  struct Seen {
    uint16_t type;
    uint16_t cpu;
    uint64_t timestamp;
    size_t size;
  };
  std::vector<Seen> seen;
  EXPECT_EQ(ring.reader().Drain(
                [&](const RecordView& r) {
                  seen.push_back({r.type, r.cpu, r.timestamp, r.payload.size()});
                },
                10),
            3u);
  EXPECT_FALSE(ring.reader().broken());
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].type, 11);
  EXPECT_EQ(seen[0].cpu, 7);
  EXPECT_EQ(seen[0].timestamp, 1000u);
  EXPECT_EQ(seen[0].size, kMaxPayload);
  EXPECT_EQ(seen[1].type, 12);
  EXPECT_EQ(seen[1].cpu, 8);
  EXPECT_EQ(seen[1].timestamp, 2000u);
  EXPECT_EQ(seen[1].size, 2036u - kCommonHeaderBytes);
  EXPECT_EQ(seen[2].type, 13) << "the event that ends with the data area";
  EXPECT_EQ(seen[2].size, 2028u - kCommonHeaderBytes);
  EXPECT_EQ(ring.ring().header()->tail.load(), 8192u);
}

// A closed page handed whole is not looked into: its copy is checked by
// whoever takes it (service/page_check.h). Reading goes on after it.
TEST(RingHostileTest, StagePagesHandsAClosedPageOnUnread) {
  CraftedRing ring;
  ring.Page(0, 0xffffffff, 3, 77);  // an impossible commit
  ring.Word(16, EventWord(31, 0));  // and an impossible event
  ring.Page(4096, 0, 4, 88);
  ring.SetHead(ring.Event(4096 + 16, 16));
  std::vector<PageHead> pages;
  std::vector<RecordHead> records;
  EXPECT_EQ(
      ring.reader().StagePages([&](const RecordHead& head, const PayloadSource&) { records.push_back(head); },
                               [&](const PageHead& head, const PayloadSource& page) {
                                 EXPECT_EQ(page.size(), kRingPageSize);
                                 pages.push_back(head);
                               },
                               1000, /*hold_open_page=*/false),
      RingReader::kPageWeight + 1);
  EXPECT_FALSE(ring.reader().broken());
  ASSERT_EQ(pages.size(), 1u);
  EXPECT_EQ(pages[0].cpu, 3);
  EXPECT_EQ(pages[0].timestamp, 77u);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].cpu, 4);
  EXPECT_EQ(records[0].timestamp, 88u);
}

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
  EXPECT_EQ(ring.header()->tail.load(), 16u + 5 * 20);
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

// Random bytes and random heads, with plausible pages and events now and
// then so that the reader goes deeper, many times over; read event by event
// and page by page.
TEST(RingHostileTest, RandomGarbageNeverEscapes) {
  constexpr uint32_t kSize = 8192;
  std::mt19937_64 rng(12345);
  size_t delivered = 0, pages = 0, broken = 0;
  std::vector<uint8_t> copy(kRingPageSize);
  for (int iteration = 0; iteration < 3000; ++iteration) {
    TestRing ring(kSize);
    auto reader = ring.GuardedReader();
    ASSERT_NE(reader, nullptr);
    const auto* mapping = static_cast<const uint8_t*>(RingReaderTestPeer::Base(*reader));
    uint8_t* data = ring.data();
    for (size_t i = 0; i < kSize; i += 8) {
      const uint64_t word = rng();
      std::memcpy(data + i, &word, 8);
    }
    // Plausible events in most pages, and where they end: plausible heads.
    std::vector<uint64_t> ends;
    for (uint64_t page = 0; page < kSize; page += kRingPageSize) {
      if (rng() % 4 == 0) continue;
      uint64_t pos = page + sizeof(PageHeader);
      for (;;) {
        uint32_t words[2] = {static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng())};
        uint32_t bytes;
        switch (rng() % 8) {
          case 0:  // explicit length
            bytes = 8 + 8 + static_cast<uint32_t>(rng() % 300) * 4;
            words[0] &= ~kTypeLenMask;
            words[1] = bytes - 4;
            break;
          case 1:  // time extend
            bytes = 8;
            words[0] = (words[0] & ~kTypeLenMask) | kTypeTimeExtend;
            break;
          case 2:  // anything
            bytes = 4 + static_cast<uint32_t>(rng() % 64) * 4;
            break;
          default:
            bytes = 4 + 8 + static_cast<uint32_t>(rng() % (kMaxSmallTypeLen - 1)) * 4;
            words[0] = (words[0] & ~kTypeLenMask) | (bytes - 4) / 4;
            break;
        }
        if (rng() % 16 == 0 || pos + std::max<uint64_t>(bytes, sizeof(words)) > page + kRingPageSize) break;
        ring.Put(pos, words);
        pos += bytes;
        ends.push_back(pos);
      }
      // The commit word's byte count (the cpu above it stays random).
      const uint32_t commits[] = {static_cast<uint32_t>(pos - page - sizeof(PageHeader)),
                                  static_cast<uint32_t>(rng() % (kPageDataBytes + 64)),
                                  static_cast<uint32_t>(rng()), 0};
      ring.Put(page + offsetof(PageHeader, commit), commits[rng() % 4]);
    }
    for (int step = 0; step < 4; ++step) {
      const uint64_t tail = ring.header()->tail.load();
      const uint64_t next_page = (tail + kRingPageSize - 1) & ~uint64_t{kRingPageSize - 1};
      const uint64_t heads[] = {rng(), tail + rng() % (kSize + 200), tail + rng() % (kSize / 4 + 50) * 4,
                                next_page + rng() % 3 * kRingPageSize,
                                ends.empty() ? tail : ends[rng() % ends.size()]};
      ring.header()->head.store(heads[rng() % 5]);
      const uint64_t before = Checksum(data, kSize);
      if (rng() % 2 == 0) {
        delivered += reader->Drain(
            [&](const RecordView& r) {
              ASSERT_LE(r.payload.size(), kMaxPayload);
              ASSERT_EQ(r.payload.size() % 4, 0u);
              const auto* p = r.payload.data();
              ASSERT_TRUE(p + r.payload.size() <= mapping || p >= mapping + kHeaderBytes + kSize)
                  << "view into shared memory";
            },
            100);
      } else {
        reader->StagePages(
            [&](const RecordHead& head, const PayloadSource& payload) {
              ASSERT_LE(head.payload_size, kMaxPayload);
              ASSERT_EQ(payload.size(), head.payload_size);
              payload.CopyTo(copy.data());
              ++delivered;
            },
            [&](const PageHead&, const PayloadSource& page) {
              page.CopyPageTo(copy.data());
              ++pages;
            },
            100 * RingReader::kPageWeight, /*hold_open_page=*/rng() % 2 == 0);
        reader->Release();
      }
      ASSERT_EQ(Checksum(data, kSize), before) << "reader wrote the data area";
      if (reader->broken()) break;
    }
    broken += reader->broken();
  }
  // The generator must exercise every outcome, or the test proves nothing.
  EXPECT_GT(delivered, 1000u);
  EXPECT_GT(pages, 300u);
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
  std::vector<uint8_t> copy(kRingPageSize);
  int status = 0;
  for (int round = 0; waitpid(child, &status, WNOHANG) == 0; ++round) {
    if (round % 2 == 0) {
      reader->Drain([](const RecordView& r) { ASSERT_LE(r.payload.size(), kMaxPayload); }, 1000);
    } else {
      reader->StagePages(
          [&](const RecordHead&, const PayloadSource& payload) { payload.CopyTo(copy.data()); },
          [&](const PageHead&, const PayloadSource& page) { page.CopyPageTo(copy.data()); }, 1000,
          /*hold_open_page=*/round % 4 == 1);
      reader->Release();
    }
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
