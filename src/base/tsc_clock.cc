#include "base/tsc_clock.h"

#include <algorithm>
#include <limits>

#include "base/tsc.h"

namespace udiag::base {
namespace {

constexpr int kMeasureTries = 5;
constexpr uint64_t kCalibrationNs = 2'000'000;

// ticks * mult in 32.32 fixed point, saturated.
uint64_t Scale(uint64_t ticks, uint64_t mult) {
  const unsigned __int128 ns = (static_cast<unsigned __int128>(ticks) * mult) >> 32;
  return ns > std::numeric_limits<uint64_t>::max() ? std::numeric_limits<uint64_t>::max()
                                                    : static_cast<uint64_t>(ns);
}

uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return b > std::numeric_limits<uint64_t>::max() - a ? std::numeric_limits<uint64_t>::max() : a + b;
}

}  // namespace

TscClock::TscClock() {
  const Anchor first = Measure();
  while (MonotonicNs() - first.ns < kCalibrationNs) {
  }
  anchors_ = {first, Measure()};
  Rebuild();
}

TscClock::TscClock(Anchor first, Anchor second) : anchors_{first, second} { Rebuild(); }

TscClock::Anchor TscClock::Measure() {
  Anchor best{};
  uint64_t best_bracket = std::numeric_limits<uint64_t>::max();
  uint32_t cpu;
  for (int i = 0; i < kMeasureTries; ++i) {
    const uint64_t before = ReadTsc(&cpu);
    const uint64_t ns = MonotonicNs();
    const uint64_t after = ReadTsc(&cpu);
    if (after - before < best_bracket) {
      best_bracket = after - before;
      best = {before + (after - before) / 2, ns};
    }
  }
  return best;
}

void TscClock::Sample() {
  // Cheap enough to call on every loop of the daemon.
  if (MonotonicNs() < anchors_.back().ns + kMinSpacingNs) return;
  AddAnchor(Measure());
}

void TscClock::AddAnchor(Anchor anchor) {
  const Anchor& last = anchors_.back();
  if (anchor.tsc <= last.tsc || anchor.ns < last.ns + kMinSpacingNs) return;
  anchors_.push_back(anchor);
  Prune();
  Rebuild();
}

uint64_t TscClock::ToMonotonicInGeneral(uint64_t tsc) {
  const Anchor& first = anchors_.front();
  const Anchor& last = anchors_.back();
  uint64_t ns;
  if (tsc >= last.tsc) {
    ns = SaturatingAdd(last.ns, Scale(tsc - last.tsc, rate_mult_));
  } else if (tsc < first.tsc) {
    const uint64_t back = Scale(first.tsc - tsc, rate_mult_);
    ns = back > first.ns ? 0 : first.ns - back;
  } else {
    // The last segment starting at or before tsc. Ticks come mostly in
    // order and from the last few ms: try the segment used last first.
    if (tsc < segments_[hint_].start.tsc ||
        (hint_ + 1 < segments_.size() && tsc >= segments_[hint_ + 1].start.tsc)) {
      auto it = std::upper_bound(segments_.begin(), segments_.end(), tsc,
                                 [](uint64_t t, const Segment& s) { return t < s.start.tsc; });
      hint_ = static_cast<size_t>(it - segments_.begin()) - 1;
    }
    const Segment& segment = segments_[hint_];
    ns = segment.start.ns + Scale(tsc - segment.start.tsc, segment.mult);
  }
  // A new anchor can bend the line below what was already handed out for
  // ticks after it; hold the value instead of going back.
  if (tsc >= last_tsc_) {
    ns = std::max(ns, last_ns_);
    last_tsc_ = tsc;
    last_ns_ = ns;
  }
  return ns;
}

uint64_t TscClock::Mult(const Anchor& from, const Anchor& to) {
  if (to.tsc <= from.tsc || to.ns < from.ns) return 0;
  const unsigned __int128 mult =
      (static_cast<unsigned __int128>(to.ns - from.ns) << 32) / (to.tsc - from.tsc);
  return mult > std::numeric_limits<uint64_t>::max() ? std::numeric_limits<uint64_t>::max()
                                                      : static_cast<uint64_t>(mult);
}

void TscClock::Prune() {
  while (anchors_.size() > 2 && anchors_.back().ns - anchors_.front().ns > kMaxBaselineNs) {
    anchors_.erase(anchors_.begin());
  }
  // Thin out the older half: the oldest anchor (the baseline) stays, recent
  // ones stay dense.
  if (anchors_.size() > kMaxAnchors) {
    const size_t half = anchors_.size() / 2;
    size_t out = 1;
    for (size_t in = 1; in < anchors_.size(); ++in) {
      if (in < half && in % 2 == 1) continue;
      anchors_[out++] = anchors_[in];
    }
    anchors_.resize(out);
  }
}

void TscClock::Rebuild() {
  segments_.clear();
  for (size_t i = 0; i + 1 < anchors_.size(); ++i) {
    segments_.push_back({anchors_[i], anchors_[i + 1].tsc, Mult(anchors_[i], anchors_[i + 1])});
  }
  rate_mult_ = Mult(anchors_.front(), anchors_.back());
  hint_ = segments_.size() - 1;
}

}  // namespace udiag::base
