// Daemon side of an event ring (layout in ring_layout.h).
//
// The producer owns the memory and may write anything into it at any time,
// so nothing read from it is used before it is copied out and checked: a
// record's header is copied out and checked, then its payload is copied into
// private memory (the caller's, or a buffer here), and only that copy is
// handed out.
// A ring that breaks the protocol once is marked broken and never read
// again; the producer loses only its own events. One thread drains a ring.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

#include "base/error_or.h"
#include "base/short_copy.h"
#include "ring/ring_layout.h"

namespace udiag::ring {

struct RecordView {
  uint16_t type;
  uint16_t cpu;
  uint64_t timestamp;
  std::span<const uint8_t> payload;  // valid until the next record
};

// A record's header, copied out of the ring and checked.
struct RecordHead {
  uint16_t type;
  uint16_t cpu;
  uint64_t timestamp;
  uint32_t payload_size;  // at most kMaxPayload
};

// The payload of the record being handed out, still in shared memory: it can
// only be copied out, never read in place (the producer may change it at any
// time). Valid during the sink call it is passed to (DrainHeads), or until
// the reader's Release (Stage).
class PayloadSource {
 public:
  uint32_t size() const { return size_; }
  // Writes exactly size() bytes (base::CopyShort: the usual short payloads
  // take a few fixed-size moves).
  void CopyTo(uint8_t* destination) const { base::CopyShort(destination, at_, size_); }

 private:
  friend class RingReader;
  PayloadSource(const uint8_t* at, uint32_t size) : at_(at), size_(size) {}
  const uint8_t* at_;
  uint32_t size_;
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
    return DrainHeads(
        [&](const RecordHead& head, const PayloadSource& payload) {
          payload.CopyTo(buffer_);
          sink(RecordView{head.type, head.cpu, head.timestamp, {buffer_, head.payload_size}});
        },
        max_records);
  }

  // Like Drain, but `sink` takes (const RecordHead&, const PayloadSource&)
  // and copies the payload where it will keep it (or skips it): one copy
  // per record instead of two.
  template <typename Sink>
  size_t DrainHeads(Sink&& sink, size_t max_records) {
    const size_t count = ReadHeads</*publish=*/true>(sink, max_records);
    Release();
    return count;
  }

  // Like DrainHeads, but the records' space stays ours until Release(), so
  // the sink may keep each PayloadSource and copy it out later: the drain
  // loop puts several rings' records in time order before copying them.
  template <typename Sink>
  size_t Stage(Sink&& sink, size_t max_records) {
    return ReadHeads</*publish=*/false>(sink, max_records);
  }
  // Gives the space of the records read so far back to the producer (and
  // wakes a writer waiting for it): their PayloadSources are spent.
  void Release() {
    PublishTail();
    if (writer_may_wait_) WakeWaitingWriter();
  }

  // Lets the writer wait up to `ms` for room when the ring is full instead
  // of dropping (0: it drops at once). A waiting writer is woken when a
  // drain has freed an eighth of the ring or emptied it, so it comes back
  // to room for a batch, not for one record.
  void SetWriterWait(uint32_t ms);

  // Increase of the producer's lost counter since the last call; a counter
  // that goes backwards gives 0 until it passes its highest value again.
  // The counter is the producer's word: an increase is clamped to what one
  // thread could have lost since the last call (one event per nanosecond,
  // plus a little slack), so a hostile ring cannot report 2^64 losses.
  uint64_t TakeLost();

  bool broken() const { return broken_; }
  // Where reading has got to: its increase is the ring bytes consumed.
  uint64_t position() const { return tail_; }
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

  // Copies out and checks the next record's header and finds its payload
  // (checked to lie within the committed bytes); false when there is none or
  // the ring is (now) broken. `publish`: on reaching the head, first give
  // what was read back to the producer.
  bool Next(RecordHead* head, const uint8_t** payload, bool publish);
  // Hands up to max_records records to `sink`. Only a later Next (with
  // `publish`) or Release publishes the tail past a record: its space is not
  // the producer's again until the sink has copied it.
  template <bool publish, typename Sink>
  size_t ReadHeads(Sink& sink, size_t max_records) {
    size_t count = 0;
    RecordHead head;
    const uint8_t* payload;
    while (count < max_records && Next(&head, &payload, publish)) {
      sink(static_cast<const RecordHead&>(head), PayloadSource(payload, head.payload_size));
      ++count;
    }
    return count;
  }
  // Takes a new snapshot of head, checking it.
  bool LoadHead();
  void PublishTail();
  void WakeWaitingWriter();

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
  uint64_t lost_checked_ns_;  // when TakeLost last read the counter (or Map)
  bool broken_ = false;
  bool writer_may_wait_ = false;
  alignas(8) uint8_t buffer_[kMaxPayload];
};

// Inline: it runs once per record, and its result feeds the sink's checks.
inline bool RingReader::Next(RecordHead* head, const uint8_t** payload, bool publish) {
  while (!broken_) {
    if (tail_ == head_) {
      if (publish) PublishTail();
      if (!LoadHead() || tail_ == head_) return false;
    }
    // tail_ and head_ are 8-aligned and data_size a multiple of 8, so both
    // to_end and avail are at least 8: enough for size and type.
    const uint64_t pos = tail_ & mask_;
    const uint64_t to_end = size_ - pos;
    const uint64_t avail = head_ - tail_;
    RecordHeader header{};
    const uint64_t header_bytes = std::min<uint64_t>({sizeof(header), to_end, avail});
    if (header_bytes == sizeof(header)) {
      std::memcpy(&header, data_ + pos, sizeof(header));  // the usual case, a fixed-size copy
    } else {
      std::memcpy(&header, data_ + pos, header_bytes);
    }
    if (header.type == kPaddingType) {
      if (pos == 0 || header.size != to_end || to_end > avail) break;
      tail_ += to_end;
      continue;
    }
    const uint64_t bytes = AlignRecord(header.size);
    if (header.size < sizeof(RecordHeader) || header.size > sizeof(RecordHeader) + kMaxPayload ||
        bytes > to_end || bytes > avail) {
      break;
    }
    *head = {header.type, header.cpu, header.timestamp, static_cast<uint32_t>(header.size - sizeof(RecordHeader))};
    *payload = data_ + pos + sizeof(RecordHeader);
    tail_ += bytes;
    return true;
  }
  broken_ = true;
  return false;
}

}  // namespace udiag::ring
