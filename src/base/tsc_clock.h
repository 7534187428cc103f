// Converts TSC ticks (what producers stamp records with) to CLOCK_MONOTONIC
// nanoseconds, daemon side.
//
// Keeps (tsc, ns) anchors taken by Sample(): between two anchors a tick is
// interpolated on the line joining them, outside it is extrapolated from the
// nearest anchor at the rate of the longest baseline. Call Sample() now and
// then (every second or so); the kernel slews CLOCK_MONOTONIC with NTP, so
// anchors also follow that drift. Not thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace udiag::base {

class TscClock {
 public:
  struct Anchor {
    uint64_t tsc;
    uint64_t ns;
  };

  // Takes an anchor, busy-waits ~2 ms and takes another, so that the rate is
  // known from the start.
  TscClock();
  // Starts from two given anchors (at least kMinSpacingNs apart), without
  // reading any clock: for tests and replays.
  TscClock(Anchor first, Anchor second);

  // Reads an anchor from the hardware (the tightest of a few tries).
  static Anchor Measure();

  // Adds Measure() as an anchor, unless the last one is under
  // kMinSpacingNs old.
  void Sample();
  // Adds an anchor. Ignored unless it is later in both clocks than the last
  // one and at least kMinSpacingNs after it (a closer one adds noise, no
  // information).
  void AddAnchor(Anchor anchor);

  // Never goes backwards between calls with non-decreasing tsc, even across
  // new anchors (a jump back is flattened); saturates instead of wrapping on
  // absurd input.
  uint64_t ToMonotonic(uint64_t tsc) {
    // The usual tick: past the last anchor, or in the segment used last
    // (close enough that the product fits in 64 bits). A ring's records
    // come in order and often predate the last anchors by some ms (a
    // producer's backlog), so one lookup serves a run of them. Ticks before
    // the last conversion (another thread's ring, drained after this one's)
    // are common too; they get the line as it is, as in ToMonotonicInGeneral.
    const bool past = tsc >= anchors_.back().tsc;
    const Segment& segment = segments_[hint_];
    const Anchor& from = past ? anchors_.back() : segment.start;
    const uint64_t mult = past ? rate_mult_ : segment.mult;
    if (tsc >= from.tsc && (past || tsc < segment.end_tsc) && tsc - from.tsc < kFastTicks &&
        mult < kFastMultLimit) {
      const uint64_t ns = from.ns + ((tsc - from.tsc) * mult >> 32);
      if (tsc < last_tsc_) return ns;
      last_tsc_ = tsc;
      last_ns_ = std::max(ns, last_ns_);
      return last_ns_;
    }
    return ToMonotonicInGeneral(tsc);
  }

  // The straight line ToMonotonic follows from `tsc` on: its segment, or
  // past the last anchor the extrapolation. It converts a short run of
  // ticks from there (a ring page) with a multiply each, extrapolating past
  // the segment's end (off by well under a ns over a page's few µs) and
  // without ToMonotonic's hold against a new anchor bending the line back.
  struct Line {
    uint64_t tsc;
    uint64_t ns;
    uint64_t mult;
    // For ticks from `tsc` on, while Reaches() them.
    uint64_t At(uint64_t ticks) const { return ns + ((ticks - tsc) * mult >> 32); }
    bool Reaches(uint64_t ticks) const {
      return ticks >= tsc && ticks - tsc < kFastTicks && mult < kFastMultLimit;
    }
  };
  Line LineAt(uint64_t tsc) {
    const uint64_t ns = ToMonotonic(tsc);  // also points hint_ at tsc's segment, if any
    const bool inside = tsc >= anchors_.front().tsc && tsc < anchors_.back().tsc;
    return {tsc, ns, inside ? segments_[hint_].mult : rate_mult_};
  }

  // About how many ticks make `ns` (below 2^32), at the longest baseline's rate.
  uint64_t TicksIn(uint64_t ns) const { return (ns << 32) / rate_mult_; }

  size_t anchor_count() const { return anchors_.size(); }

  static constexpr uint64_t kMinSpacingNs = 1'000'000;
  static constexpr size_t kMaxAnchors = 32;
  // Anchors older than this are dropped: the rate of a longer baseline would
  // average over NTP corrections that no longer apply.
  static constexpr uint64_t kMaxBaselineNs = 60'000'000'000;

 private:
  struct Segment {
    Anchor start;
    uint64_t end_tsc;  // the next anchor's
    uint64_t mult;     // ns per tick, 32.32 fixed point, up to the next anchor
  };

  // The fast path's bounds: ticks * mult < 2^32 * 2^32.
  static constexpr uint64_t kFastTicks = uint64_t{1} << 32;
  static constexpr uint64_t kFastMultLimit = uint64_t{1} << 32;

  uint64_t ToMonotonicInGeneral(uint64_t tsc);
  static uint64_t Mult(const Anchor& from, const Anchor& to);
  void Prune();
  void Rebuild();

  std::vector<Anchor> anchors_;
  std::vector<Segment> segments_;  // one per anchor but the last
  size_t hint_ = 0;                // the segment ToMonotonic used last
  uint64_t rate_mult_ = 0;         // longest baseline, for extrapolation
  uint64_t last_tsc_ = 0;          // last conversion, for monotonicity
  uint64_t last_ns_ = 0;
};

}  // namespace udiag::base
