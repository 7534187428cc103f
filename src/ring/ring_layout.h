// The shared-memory layout of one producer thread's event ring.
//
// One ring per producer thread, in a sealed memfd the producer creates and
// passes to udiagd. The producer is the only writer of `head`, `lost`,
// `closed` and the data area; the daemon is the only writer of `tail`,
// `lost_taken`, `consumer_sleeping` and `full_wait_ms`. `writer_waiting`
// is set by the producer and cleared by the daemon.
//
// The data area is a sequence of ftrace ring-buffer pages (formats.md §1.6),
// the unit trace.dat stores: the producer writes its events already encoded
// as trace-cmd reads them, so a recording can move a page whole. See
// "Pages" below for what the producer writes where.
//
// The daemon treats every byte of the mapping as hostile input: it never
// trusts `head`, page headers or events, and checks what it keeps in its
// own copy (see ring_reader.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "record/tracedat/tracedat_layout.h"

namespace udiag::ring {

inline constexpr uint32_t kRingMagic = 0x31524455;  // "UDR1"
inline constexpr uint32_t kRingVersion = 2;
inline constexpr size_t kHeaderBytes = 4096;  // data starts one page in
// Accepted sizes of the data area (a power of two in this range: whole pages).
inline constexpr uint32_t kMinDataSize = 4096;
inline constexpr uint32_t kMaxDataSize = 64u << 20;

// What a consumer's `consumer_sleeping` says (the producer reads it at
// each commit):
//   kConsumerAwake   it polls the ring on its own;
//   kConsumerSleeps  it waits for the next commit's poke;
//   kConsumerDozes   it polls rarely and wants a poke only once a page
//                    opens with an eighth of the ring unread, so that a
//                    burst wakes it before the ring fills. Set only for
//                    rings whose producer says kRingWakesDozingConsumer.
inline constexpr uint32_t kConsumerAwake = 0;
inline constexpr uint32_t kConsumerSleeps = 1;
inline constexpr uint32_t kConsumerDozes = 2;
// Bits of RingHeader::features.
inline constexpr uint32_t kRingWakesDozingConsumer = 1;

// Timestamp domain of the events' times, chosen by the producer.
enum class ClockDomain : uint32_t {
  kTsc = 0,        // raw invariant TSC ticks (rdtsc); the daemon converts
  kMonotonic = 1,  // CLOCK_MONOTONIC nanoseconds
};

struct RingHeader {
  // Written once by the producer before the memfd is sent.
  uint32_t magic;
  uint32_t version;
  uint32_t data_size;  // bytes in the data area, a power of two
  uint32_t tid;        // producer thread (checked against the peer's pid)
  uint32_t clock;      // ClockDomain
  uint32_t features;   // kRingWakesDozingConsumer; 0 from older producers

  // Bytes committed since creation (producer-owned, monotonic).
  alignas(64) std::atomic<uint64_t> head;
  // Bytes consumed since creation (daemon-owned, monotonic).
  alignas(64) std::atomic<uint64_t> tail;
  // The `lost` count the daemon has taken into its trace (daemon-owned):
  // once the daemon is gone, its thread tells the next one of the rest.
  // In what was padding, so that rings and daemons from before it still
  // work together (a daemon from before leaves it 0).
  std::atomic<uint64_t> lost_taken;
  // Records the producer dropped because the ring was full.
  alignas(64) std::atomic<uint64_t> lost;
  // kConsumerAwake, kConsumerSleeps or kConsumerDozes, set by the daemon;
  // the producer that pokes the wake eventfd swaps it back to
  // kConsumerAwake, so that it pokes once.
  std::atomic<uint32_t> consumer_sleeping;
  // Set by the producer when its thread exits or moves to a larger ring;
  // the daemon frees the ring, and the data area's memory, once it is
  // drained.
  std::atomic<uint32_t> closed;

  // How long a writer that finds the ring full may wait for room before it
  // drops the record, in ms (0, the default: drop at once). Set by the
  // daemon while a consumer that must not lose events asks for it.
  alignas(64) std::atomic<uint32_t> full_wait_ms;
  // A futex word: set to 1 by a writer about to wait for room; the daemon
  // clears it and wakes the writer once it has freed space.
  std::atomic<uint32_t> writer_waiting;
};
static_assert(sizeof(RingHeader) <= kHeaderBytes);

// Pages. Page k of the byte stream covers [k * kRingPageSize, (k + 1) *
// kRingPageSize) of `head` and `tail`, at data offset (k * kRingPageSize) mod
// data_size. A page starts with a PageHeader, then events back to back in
// the ftrace encoding: a u32 word with type_len in its low 5 bits and the
// time delta from the event before in the rest (the page's `timestamp` for
// the first), then the event's data — the 8-byte common header the kernel
// writes (u16 event id, u8 flags, u8 preempt count, s32 thread id) and the
// payload, padded with zeros to a multiple of 4. type_len 1..28 says the
// data is type_len * 4 bytes; type_len 0 is followed by a u32 of the data's
// length plus 4. A type_len 30 event (time extend, 8 bytes) carries a delta
// too large for 27 bits: the low 27 bits in the word, the rest in the u32
// after it. Times are in the ring's ClockDomain.
//
// `head` is the end of the last committed event, or the start of the next
// page once the page before it is closed; it never stops inside a page's
// header. The producer closes a page (writes its final `commit`, then moves
// `head` to the next page's start) when the next event does not fit or it
// runs on another cpu, so every page holds one cpu's events. A closed page
// is never written again until `tail` has passed it.
inline constexpr uint32_t kRingPageSize = 4096;

struct PageHeader {
  uint64_t timestamp;  // of the page's first event
  // Low 32 bits: the bytes of events after the header, written alone when
  // the page is closed (0 until then); bits 32..47: the cpu of its events,
  // written with `timestamp`. The daemon rewrites the whole word in its
  // copy as trace.dat wants it (formats.md §1.6).
  uint64_t commit;
};
static_assert(sizeof(PageHeader) == 16);
inline constexpr size_t kPageCpuOffset = offsetof(PageHeader, commit) + 4;  // its u16 in the commit word
inline constexpr uint32_t kPageDataBytes = kRingPageSize - sizeof(PageHeader);
// A page's events leave this many bytes free at its end, so the daemon can
// store a count of events lost before the page there, as ftrace does.
inline constexpr uint32_t kPageLostCountBytes = 8;
inline constexpr uint32_t kPageRoom = kPageDataBytes - kPageLostCountBytes;

// The common header at the start of every event's data.
inline constexpr uint32_t kCommonHeaderBytes = 8;
// Largest payload one event may carry: what fits in an empty page after the
// explicit-length event header, the common header and the lost count.
inline constexpr uint32_t kMaxPayload = kPageRoom - 8 - kCommonHeaderBytes;

// The event header's fields are trace.dat's.
using record::tracedat::kMaxSmallTypeLen;
using record::tracedat::kMaxTimeDelta;
using record::tracedat::kTimeDeltaBits;
using record::tracedat::kTypeLenBits;
using record::tracedat::kTypeTimeExtend;
inline constexpr uint32_t kTypeLenMask = (1u << kTypeLenBits) - 1;
inline constexpr uint32_t kMaxSmallData = kMaxSmallTypeLen * 4;
static_assert(kRingPageSize == record::tracedat::kPageSize);
static_assert(sizeof(PageHeader) == record::tracedat::kPageHeaderSize);


}  // namespace udiag::ring
