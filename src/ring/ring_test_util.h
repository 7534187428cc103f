// Helpers shared by the ring tests.
#pragma once

#include <sys/mman.h>

#include <cstdint>
#include <memory>

#include "gtest/gtest.h"
#include "ring/ring_layout.h"
#include "ring/ring_reader.h"
#include "ring/ring_writer.h"

namespace udiag::ring {

// A ring made by CreateRing, unmapped and closed at scope exit.
class TestRing {
 public:
  explicit TestRing(uint32_t data_size, ClockDomain clock = ClockDomain::kTsc, uint32_t tid = 42) {
    const int err = CreateRing(data_size, tid, clock, &mapping_);
    EXPECT_EQ(err, 0);
    if (err != 0) mapping_ = {-1, nullptr, 0};
  }
  TestRing(const TestRing&) = delete;
  TestRing& operator=(const TestRing&) = delete;
  ~TestRing() {
    if (mapping_.base != nullptr) munmap(mapping_.base, mapping_.bytes);
    if (mapping_.fd >= 0) close(mapping_.fd);
  }

  int fd() const { return mapping_.fd; }
  void* base() const { return mapping_.base; }
  RingHeader* header() const { return static_cast<RingHeader*>(mapping_.base); }
  uint8_t* data() const { return static_cast<uint8_t*>(mapping_.base) + kHeaderBytes; }

  std::unique_ptr<RingReader> Reader() const {
    auto reader = RingReader::Map(mapping_.fd);
    EXPECT_TRUE(reader.ok()) << reader.error();
    return reader.ok() ? std::move(reader).value() : nullptr;
  }

 private:
  RingMapping mapping_{-1, nullptr, 0};
};

// Gives tests the reader's own mapping, so that a writer attached to it
// shares addresses with the reader and ThreadSanitizer sees every access.
class RingReaderTestPeer {
 public:
  static void* Base(RingReader& reader) { return reader.header_; }
};

}  // namespace udiag::ring
