// Daemon side of an event ring (layout in ring_layout.h).
//
// The producer owns the memory and may write anything into it at any time,
// so nothing read from it is used before it is copied out and checked: a
// record is copied into a private buffer, then validated, then handed out.
// A ring that breaks the protocol once is marked broken and never read
// again; the producer loses only its own events. One thread drains a ring.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "base/error_or.h"
#include "ring/ring_layout.h"

namespace udiag::ring {

struct RecordView {
  uint16_t type;
  uint16_t cpu;
  uint64_t timestamp;
  std::span<const uint8_t> payload;  // valid until the next record
};

class RingReader {
 public:
  // Validates and maps a ring memfd from an untrusted producer (the caller
  // keeps the fd). Errors: EPERM unless it is a memfd sealed against shrink
  // and grow (else the producer could truncate it under us: SIGBUS); EINVAL
  // unless its size is kHeaderBytes + data_size with data_size a power of two
  // in [kMinDataSize, kMaxDataSize] matching the header; EPROTO for a wrong
  // magic, version, clock or tail; mmap's errno (EACCES for a read-only fd,
  // EPERM for a write-sealed one).
  static base::ErrorOr<std::unique_ptr<RingReader>> Map(int memfd);

  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;
  ~RingReader();

  // Hands up to `max_records` committed records to `sink`, a callable taking
  // (const RecordView&), then publishes the new tail. Returns the number
  // handed out. Stops for good at the first impossible record or head.
  template <typename Sink>
  size_t Drain(Sink&& sink, size_t max_records) {
    size_t count = 0;
    RecordView view;
    while (count < max_records && Next(&view)) {
      sink(static_cast<const RecordView&>(view));
      ++count;
    }
    PublishTail();
    return count;
  }

  // Increase of the producer's lost counter since the last call; a counter
  // that goes backwards gives 0 until it passes its highest value again.
  uint64_t TakeLost();

  bool broken() const { return broken_; }
  // The producer said its thread exited.
  bool closed() const;
  // Nothing committed is left to read (or the ring is broken).
  bool empty() const;
  // Before sleeping: SetConsumerSleeping(true), then re-check empty(). Even
  // so, sleep with a timeout: producers read the flag without a fence (see
  // RingWriter::Commit).
  void SetConsumerSleeping(bool sleeping);

  uint32_t tid() const { return tid_; }
  ClockDomain clock() const { return clock_; }

 private:
  friend class RingReaderTestPeer;

  RingReader(void* base, size_t map_bytes, uint32_t data_size, uint32_t tid, ClockDomain clock,
             uint64_t tail);

  // Copies out and checks the next record; false when there is none or the
  // ring is (now) broken.
  bool Next(RecordView* view);
  // Takes a new snapshot of head, checking it.
  bool LoadHead();
  void PublishTail();

  RingHeader* const header_;
  const uint8_t* const data_;
  const size_t map_bytes_;
  const uint64_t size_;
  const uint64_t mask_;
  const uint32_t tid_;
  const ClockDomain clock_;
  uint64_t tail_;            // private: the shared copy is never read back
  uint64_t published_tail_;  // last value stored to the shared tail
  uint64_t head_;            // last checked snapshot of the shared head
  uint64_t lost_seen_ = 0;
  bool broken_ = false;
  alignas(8) uint8_t buffer_[kMaxPayload];
};

}  // namespace udiag::ring
