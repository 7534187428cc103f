// Helpers shared by the ring tests.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "base/tsc.h"
#include "gtest/gtest.h"
#include "ring/ring_layout.h"
#include "ring/ring_reader.h"
#include "ring/ring_writer.h"

namespace udiag::ring {

// Gives tests the reader's own mapping, so that a writer attached to it
// shares addresses with the reader and ThreadSanitizer sees every access.
class RingReaderTestPeer {
 public:
  static void* Base(RingReader& reader) { return reader.header_; }
};

// The common header the writer puts before every payload (ring_layout.h).
struct CommonHeader {
  uint16_t type;
  uint8_t flags;
  uint8_t preempt_count;
  int32_t tid;
};
static_assert(sizeof(CommonHeader) == kCommonHeaderBytes);

// An event header word: type_len in the low bits, the time delta above.
constexpr uint32_t EventWord(uint32_t type_len, uint32_t delta) { return type_len | delta << kTypeLenBits; }

// The payload size a reader reports for `len` written bytes: the common
// header and the payload are padded to whole words.
constexpr uint32_t PaddedPayload(uint32_t len) {
  return ((kCommonHeaderBytes + len + 3) & ~3u) - kCommonHeaderBytes;
}

// A ring made by CreateRing, unmapped and closed at scope exit. Its mapping
// sits between two PROT_NONE pages, so that an access just outside it
// crashes the test instead of hitting a neighbouring mapping.
class TestRing {
 public:
  explicit TestRing(uint32_t data_size, ClockDomain clock = ClockDomain::kTsc, uint32_t tid = 42) {
    const int err = CreateRing(data_size, tid, clock, &mapping_);
    EXPECT_EQ(err, 0);
    if (err != 0) {
      mapping_ = {-1, nullptr, 0};
      return;
    }
    munmap(mapping_.base, mapping_.bytes);
    guarded_ = mmap(nullptr, mapping_.bytes + 2 * kGuardBytes, PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    EXPECT_NE(guarded_, MAP_FAILED);
    mapping_.base = mmap(static_cast<uint8_t*>(guarded_) + kGuardBytes, mapping_.bytes,
                         PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, mapping_.fd, 0);
    EXPECT_NE(mapping_.base, MAP_FAILED);
  }
  TestRing(const TestRing&) = delete;
  TestRing& operator=(const TestRing&) = delete;
  ~TestRing() {
    if (guarded_ != nullptr) munmap(guarded_, mapping_.bytes + 2 * kGuardBytes);
    // The reader unmaps the middle itself; unmapping a range with holes is fine.
    for (void* guard : reader_guards_) munmap(guard, mapping_.bytes + 2 * kGuardBytes);
    if (mapping_.fd >= 0) close(mapping_.fd);
  }

  int fd() const { return mapping_.fd; }
  void* base() const { return mapping_.base; }
  RingHeader* header() const { return static_cast<RingHeader*>(mapping_.base); }
  uint8_t* data() const { return static_cast<uint8_t*>(mapping_.base) + kHeaderBytes; }
  uint64_t data_size() const { return mapping_.bytes - kHeaderBytes; }

  // The bytes at byte-stream position `pos` of the data area, as a T.
  template <typename T>
  T Get(uint64_t pos) const {
    T value;
    std::memcpy(&value, data() + (pos & (data_size() - 1)), sizeof(value));
    return value;
  }
  template <typename T>
  void Put(uint64_t pos, const T& value) const {
    std::memcpy(data() + (pos & (data_size() - 1)), &value, sizeof(value));
  }

  // Losses counted before `losses_since_ns` are the producer's lie.
  std::unique_ptr<RingReader> Reader(uint64_t losses_since_ns = base::MonotonicNs()) const {
    auto reader = RingReader::Map(mapping_.fd, losses_since_ns);
    EXPECT_TRUE(reader.ok()) << reader.error();
    return reader.ok() ? std::move(reader).value() : nullptr;
  }

  // A reader whose own mapping has PROT_NONE pages on both sides, like ours:
  // the kernel places a new mapping in the highest gap that fits, so a hole
  // of the exact size between two guard pages receives it — unless a higher
  // gap of that size exists (sanitizer runtimes leave some). A reader that
  // lands there is kept, filling that gap, and the next try goes in the
  // hole. (ThreadSanitizer places mappings itself: there it may never work.)
  std::unique_ptr<RingReader> GuardedReader() {
    for (int attempt = 0; attempt < 8; ++attempt) {
      void* guard = mmap(nullptr, mapping_.bytes + 2 * kGuardBytes, PROT_NONE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      EXPECT_NE(guard, MAP_FAILED);
      reader_guards_.push_back(guard);
      uint8_t* hole = static_cast<uint8_t*>(guard) + kGuardBytes;
      munmap(hole, mapping_.bytes);
      std::unique_ptr<RingReader> reader = Reader();
      if (reader == nullptr) return nullptr;
      if (RingReaderTestPeer::Base(*reader) == hole) {
        reader_guarded_ = true;
        return reader;
      }
      misplaced_readers_.push_back(std::move(reader));
    }
    return Reader();
  }
  bool reader_guarded() const { return reader_guarded_; }

 private:
  static constexpr size_t kGuardBytes = 4096;
  RingMapping mapping_{-1, nullptr, 0};
  void* guarded_ = nullptr;
  std::vector<void*> reader_guards_;
  std::vector<std::unique_ptr<RingReader>> misplaced_readers_;
  bool reader_guarded_ = false;
};

}  // namespace udiag::ring
