// The shared-memory layout of one producer thread's event ring.
//
// One ring per producer thread, in a sealed memfd the producer creates and
// passes to udiagd. The producer is the only writer of `head`, `lost`,
// `closed` and the data area; the daemon is the only writer of `tail`,
// `consumer_sleeping` and `full_wait_ms`. `writer_waiting` is set by the
// producer and cleared by the daemon.
// The daemon treats every byte of the mapping as hostile input: it never
// trusts `head`, record sizes or types, and copies a record out before
// validating it (see ring_reader.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace udiag::ring {

inline constexpr uint32_t kRingMagic = 0x31524455;  // "UDR1"
inline constexpr uint32_t kRingVersion = 1;
inline constexpr size_t kHeaderBytes = 4096;  // data starts one page in
inline constexpr size_t kRecordAlign = 8;
// Accepted sizes of the data area (a power of two in this range).
inline constexpr uint32_t kMinDataSize = 4096;
inline constexpr uint32_t kMaxDataSize = 64u << 20;

// Timestamp domain of RecordHeader::timestamp, chosen by the producer.
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

  // Bytes committed since creation (producer-owned, monotonic).
  alignas(64) std::atomic<uint64_t> head;
  // Bytes consumed since creation (daemon-owned, monotonic).
  alignas(64) std::atomic<uint64_t> tail;
  // Records the producer dropped because the ring was full.
  alignas(64) std::atomic<uint64_t> lost;
  // Set by the daemon before it sleeps; the producer that sees it set swaps
  // it back to 0 and pokes the wake eventfd, once.
  std::atomic<uint32_t> consumer_sleeping;
  // Set by the producer when its thread exits; the daemon frees the ring once
  // it is drained.
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

// Every record starts 8-aligned; the next one starts at align8(size).
struct RecordHeader {
  uint32_t size;       // header + payload bytes, not padded
  uint16_t type;       // event id; kPaddingType = skip to the ring's start
  uint16_t cpu;        // CPU the record was written on
  uint64_t timestamp;  // in the ring's ClockDomain
};
static_assert(sizeof(RecordHeader) == 16);

// A padding record fills the rest of the data area when the next record
// would not fit before its end: size == bytes left to the end (8 or more),
// and only size, type and cpu are written (the area may end 8 bytes after
// them). It is never at offset 0.
inline constexpr uint16_t kPaddingType = 0;

// Largest payload one record may carry. Matches what fits in a 4 KiB
// trace.dat page after the page and event headers, like the kernel's limit.
inline constexpr uint32_t kMaxPayload = 4096 - 16 - 8 - 8;

inline constexpr size_t AlignRecord(size_t n) { return (n + kRecordAlign - 1) & ~(kRecordAlign - 1); }

}  // namespace udiag::ring
