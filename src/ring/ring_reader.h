// Daemon side of an event ring (layout in ring_layout.h).
//
// The producer owns the memory and may write anything into it at any time,
// so nothing read from it is used before it is copied out and checked: an
// event's header words are copied out and checked, then its payload is
// copied into private memory (the caller's, or a buffer here), and only that
// copy is handed out. A whole page is handed out the same way, to be copied
// and then checked in the copy (service/page_check.h).
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
#include "ring/page_event.h"
#include "ring/ring_layout.h"

namespace udiag::ring {

struct RecordView {
  uint16_t type;
  uint16_t cpu;
  uint64_t timestamp;
  std::span<const uint8_t> payload;  // valid until the next record
};

// An event's header, copied out of the ring and checked: its id (from the
// common header), its page's cpu, its time (the page's time plus the
// deltas) and the size of its payload, padding included.
struct RecordHead {
  uint16_t type;
  uint16_t cpu;
  uint64_t timestamp;
  uint32_t payload_size;  // at most kMaxPayload
};

// A closed page at the read position, handed out whole: its cpu and time as
// its header said when read (the copy may say otherwise: check the copy).
struct PageHead {
  uint16_t cpu;
  uint64_t timestamp;
  // The time in the header of the page after it, when its producer has
  // opened one (else UINT64_MAX): an honest producer's page spans no longer
  // than from its start to that.
  uint64_t next_timestamp = UINT64_MAX;
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
  // The page of a PageHead (kRingPageSize bytes) into `destination`.
  void CopyPageTo(uint8_t* destination) const { std::memcpy(destination, at_, kRingPageSize); }
  // A payload in the daemon's own copy of a page it checked: handed on as
  // one from a ring, to be copied and its loc words checked the same way.
  static PayloadSource InCheckedCopy(const uint8_t* at, uint32_t size) { return {at, size}; }

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
  // EPERM for a write-sealed one). `losses_since_ns` (CLOCK_MONOTONIC) is a
  // time before the producer could count its first loss, the start of its
  // process: the ring may come with losses already counted (while it waited
  // to be mapped, or while the producer had no daemon), and the first
  // TakeLost allows as many as could have happened since then.
  static base::ErrorOr<std::unique_ptr<RingReader>> Map(int memfd, uint64_t losses_since_ns);

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
  // Reading stops before the first record stamped after `before` (in the
  // ring's clock), which a later call hands out.
  template <typename Sink>
  size_t Stage(Sink&& sink, size_t max_records, uint64_t before = UINT64_MAX) {
    return ReadHeads</*publish=*/false>(sink, max_records, before);
  }

  // Like Stage, but a page the producer closed, when reading is at its
  // start, goes whole to `page_sink`, taking (const PageHead&, const
  // PayloadSource&) with the page as payload; it counts as `page_weight`
  // records (kPageWeight: a page's work). With `hold_open_page`, the events
  // of the page the producer is still filling are left for later
  // (holding_open_page() says so), unless reading has started in it already
  // or its first event is stamped before `held_if_since` (in the ring's
  // clock): a page that fills that slowly is read event by event at once.
  // Reading stops before the first event stamped after `before`, as Stage's
  // does; a closed page goes whole only when the page after it, and so all
  // of its events, is stamped no later than that.
  static constexpr size_t kPageWeight = 64;
  template <typename Sink, typename PageSink>
  size_t StagePages(Sink&& sink, PageSink&& page_sink, size_t max_records, bool hold_open_page,
                    uint64_t held_if_since = 0, size_t page_weight = kPageWeight,
                    uint64_t before = UINT64_MAX) {
    size_t count = 0;
    holding_open_page_ = false;
    while (count < max_records && !broken_) {
      if (tail_ == head_ && (!LoadHead() || tail_ == head_)) break;
      // A closed page read to its end, event by event: the next may go whole.
      if (tail_ % kRingPageSize != 0 && PageReadToItsEnd()) tail_ += kRingPageSize - tail_ % kRingPageSize;
      if (tail_ % kRingPageSize == 0) {
        // An old snapshot of head may be inside the page: look again.
        if (head_ - tail_ < kRingPageSize && !LoadHead()) break;
        if (head_ - tail_ >= kRingPageSize && PageTime(tail_) > before) break;
        // Read once: the producer may change it between two reads.
        const uint64_t next_time =
            head_ - tail_ > kRingPageSize ? PageTime(tail_ + kRingPageSize) : UINT64_MAX;
        if (head_ - tail_ >= kRingPageSize &&
            (before == UINT64_MAX || (next_time != UINT64_MAX && next_time <= before))) {
          // The next closed page comes in while this one is copied and
          // checked: its lines are in the producer's cache.
          if (head_ - tail_ >= 2 * kRingPageSize) {
            const uint8_t* next = data_ + ((tail_ + kRingPageSize) & mask_);
            for (uint32_t at = 0; at < kRingPageSize; at += 64) __builtin_prefetch(next + at, 0, 3);
          }
          PageHeader header;
          std::memcpy(&header, data_ + (tail_ & mask_), sizeof(header));
          page_sink(PageHead{static_cast<uint16_t>(header.commit >> 32), header.timestamp, next_time},
                    PayloadSource(data_ + (tail_ & mask_), kRingPageSize));
          tail_ += kRingPageSize;
          count += page_weight;
          continue;
        }
        if (head_ - tail_ < kRingPageSize && hold_open_page && PageTime(tail_) >= held_if_since) {
          holding_open_page_ = true;
          break;
        }
      }
      RecordHead head;
      const uint8_t* payload;
      if (!NextUpTo(before, &head, &payload)) break;
      sink(static_cast<const RecordHead&>(head), PayloadSource(payload, head.payload_size));
      ++count;
    }
    return count;
  }
  // The last StagePages stopped at a page the producer is still filling.
  bool holding_open_page() const { return holding_open_page_; }

  // How far in time reading `pages` pages on reaches, for a caller that
  // reads several rings up to one time: the time the producer put in the
  // header of the page that many pages after the one reading is in, once
  // it has opened it; else, when StagePages would hold the page the
  // producer is filling (`hold_open_page`, `held_if_since`), that page's
  // time; else UINT64_MAX (reading would take everything). The producer's
  // word, in the ring's clock: a bound to read up to, nothing more.
  uint64_t TimeAfterPages(size_t pages, bool hold_open_page, uint64_t held_if_since);

  // Hands the events of a page that StagePages gave out whole to `sink`, as
  // Stage would have: for a page that could not be kept whole. Its header
  // and events are read again and checked as they are read; a bad event
  // ends the page.
  template <typename Sink>
  static void StageEventsOfPage(const PayloadSource& page, Sink&& sink) {
    PageHeader header;
    std::memcpy(&header, page.at_, sizeof(header));
    const uint8_t* const events = page.at_ + sizeof(PageHeader);
    const uint64_t bytes = std::min<uint64_t>(static_cast<uint32_t>(header.commit), kPageDataBytes);
    const auto cpu = static_cast<uint16_t>(header.commit >> 32);
    uint64_t time = header.timestamp;
    PageEvent event;
    for (uint64_t at = 0; at < bytes && DecodePageEvent(events + at, bytes - at, &event);) {
      time += event.delta;
      at += event.bytes;
      if (event.data_bytes == 0) continue;
      RecordHead head;
      const uint8_t* payload;
      if (!RecordOf(event, events + at, cpu, time, &head, &payload)) return;
      sink(static_cast<const RecordHead&>(head), PayloadSource(payload, head.payload_size));
    }
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
  // The counter's value read goes back as `lost_taken`.
  uint64_t TakeLost();

  bool broken() const { return broken_; }
  // Where reading has got to: its increase is the ring bytes consumed.
  uint64_t position() const { return tail_; }
  // The producer said its thread exited, or moved on to a larger ring.
  bool closed() const;
  // Nothing committed is left to read (or the ring is broken).
  bool empty() const;
  // Frees the data area's memory in every process that maps it, for a ring
  // drained and closed: its thread may keep the mapping a while (it holds
  // a ring it outgrew until it sees it drained), and only reads the header.
  void DiscardData();
  // Before sleeping: SetConsumerSleeping(true), then re-check empty(). Even
  // so, sleep with a timeout: producers read the flag without a fence (see
  // RingWriter::Commit).
  void SetConsumerSleeping(bool sleeping);
  // While awake: whether the producer is to poke only once a burst has
  // filled an eighth of the ring (kConsumerDozes). False when asked to
  // doze but the producer does not say it pokes a dozing consumer: then
  // the consumer must keep polling as often as a burst needs.
  bool SetConsumerDozing(bool dozing);

  uint32_t tid() const { return tid_; }
  ClockDomain clock() const { return clock_; }

 private:
  friend class RingReaderTestPeer;

  RingReader(void* base, size_t map_bytes, uint32_t data_size, uint32_t tid, ClockDomain clock,
             uint64_t tail, bool wakes_dozing_consumer, uint64_t losses_since_ns);

  // Copies out and checks the next event's header and finds its payload
  // (checked to lie within the committed bytes of its page); false when
  // there is none or the ring is (now) broken. `publish`: on reaching the head, first give
  // what was read back to the producer.
  bool Next(RecordHead* head, const uint8_t** payload, bool publish);
  // Hands up to max_records records to `sink`, without publishing: those
  // stamped up to `before`. With `publish`, the tail is published whenever
  // reading reaches the head, and so past the records the sink has had.
  template <bool publish, typename Sink>
  size_t ReadHeads(Sink& sink, size_t max_records, uint64_t before = UINT64_MAX) {
    size_t count = 0;
    RecordHead head;
    const uint8_t* payload;
    while (count < max_records &&
           (publish ? Next(&head, &payload, true) : NextUpTo(before, &head, &payload))) {
      sink(static_cast<const RecordHead&>(head), PayloadSource(payload, head.payload_size));
      ++count;
    }
    return count;
  }
  static bool RecordOf(const PageEvent& event, const uint8_t* end, uint16_t cpu, uint64_t time, RecordHead* head,
                       const uint8_t** payload);
  // Takes a new snapshot of head, checking it.
  bool LoadHead();
  // Where the events of the page holding tail_ end, in the byte stream:
  // head_ while the producer still fills it, else what its commit says.
  // False when that is impossible.
  bool PageEnd(uint64_t* end);
  // Next, unless the next record is stamped after `before`: then reading
  // stays where it was, for a later call.
  bool NextUpTo(uint64_t before, RecordHead* head, const uint8_t** payload) {
    const uint64_t tail = tail_, page_time = page_time_, page_end = page_end_;
    const uint16_t page_cpu = page_cpu_;
    if (!Next(head, payload, /*publish=*/false)) return false;
    if (head->timestamp <= before) return true;
    tail_ = tail, page_time_ = page_time, page_end_ = page_end, page_cpu_ = page_cpu;
    return false;
  }
  // The time in the header of the page starting at `page` (opened: head_
  // is past its start).
  uint64_t PageTime(uint64_t page) const {
    uint64_t time;
    std::memcpy(&time, data_ + (page & mask_) + offsetof(PageHeader, timestamp), sizeof(time));
    return time;
  }
  bool PageReadToItsEnd() {
    uint64_t end;
    return head_ - (tail_ - tail_ % kRingPageSize) >= kRingPageSize && PageEnd(&end) && tail_ == end;
  }
  void PublishTail();
  void WakeWaitingWriter();

  RingHeader* const header_;
  const uint8_t* const data_;
  const size_t map_bytes_;
  const uint64_t size_;
  const uint64_t mask_;
  const uint32_t tid_;
  const ClockDomain clock_;
  const bool wakes_dozing_consumer_;  // kRingWakesDozingConsumer
  uint64_t tail_;            // private: the shared copy is never read back
  uint64_t published_tail_;  // last value stored to the shared tail
  uint64_t head_;            // last checked snapshot of the shared head
  // The page being read: its cpu, the time of its event before tail_, and
  // where its events end once it is closed (0: not known yet).
  uint16_t page_cpu_ = 0;
  uint64_t page_time_ = 0;
  uint64_t page_end_ = 0;
  bool holding_open_page_ = false;
  uint64_t lost_seen_ = 0;
  uint64_t lost_checked_ns_;  // a time before TakeLost last read the counter (or Map's losses_since_ns)
  bool broken_ = false;
  bool writer_may_wait_ = false;
  alignas(8) uint8_t buffer_[kMaxPayload];
};

// The record of data event `event`, which ends at `end`; false when its data
// cannot be a record (no room for the common header, too large).
inline bool RingReader::RecordOf(const PageEvent& event, const uint8_t* end, uint16_t cpu, uint64_t time,
                                 RecordHead* head, const uint8_t** payload) {
  if (event.data_bytes < kCommonHeaderBytes || event.data_bytes - kCommonHeaderBytes > kMaxPayload) return false;
  const uint8_t* data = end - event.data_bytes;
  uint16_t type;
  std::memcpy(&type, data, sizeof(type));
  *head = {type, cpu, time, event.data_bytes - kCommonHeaderBytes};
  *payload = data + kCommonHeaderBytes;
  return true;
}

// Inline: it runs once per record, and its result feeds the sink's checks.
inline bool RingReader::Next(RecordHead* head, const uint8_t** payload, bool publish) {
  while (!broken_) {
    if (tail_ == head_) {
      if (publish) PublishTail();
      if (!LoadHead() || tail_ == head_) return false;
    }
    const uint64_t in_page = tail_ % kRingPageSize;
    if (in_page == 0) {  // a page begins: LoadHead saw head_ past its header
      // Not the byte count: the producer may be closing the page.
      const uint8_t* header = data_ + (tail_ & mask_);
      std::memcpy(&page_time_, header + offsetof(PageHeader, timestamp), sizeof(page_time_));
      std::memcpy(&page_cpu_, header + kPageCpuOffset, sizeof(page_cpu_));
      page_end_ = 0;
      tail_ += sizeof(PageHeader);
      continue;
    }
    uint64_t end;
    if (!PageEnd(&end)) break;
    if (tail_ == end) {  // a closed page read to its end
      tail_ += kRingPageSize - in_page;
      continue;
    }
    PageEvent event;
    const uint8_t* const at = data_ + (tail_ & mask_);
    if (!DecodePageEvent(at, end - tail_, &event)) break;
    page_time_ += event.delta;
    tail_ += event.bytes;
    if (event.data_bytes == 0) continue;  // a time extend
    if (!RecordOf(event, at + event.bytes, page_cpu_, page_time_, head, payload)) break;
    return true;
  }
  broken_ = true;
  return false;
}

inline bool RingReader::PageEnd(uint64_t* end) {
  if (page_end_ != 0) {
    *end = page_end_;
    return true;
  }
  const uint64_t page_start = tail_ - tail_ % kRingPageSize;
  if (head_ - page_start < kRingPageSize) {
    *end = head_;
    return true;
  }
  uint64_t commit;
  std::memcpy(&commit, data_ + (page_start & mask_) + offsetof(PageHeader, commit), sizeof(commit));
  const uint64_t bytes = static_cast<uint32_t>(commit);
  page_end_ = page_start + sizeof(PageHeader) + bytes;
  *end = page_end_;
  return bytes <= kPageDataBytes && page_end_ >= tail_;
}

}  // namespace udiag::ring
