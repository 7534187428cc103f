#include "record/tracedat/page_encoder.h"

#include <cstring>

#include "record/tracedat/tracedat_layout.h"

namespace udiag::record::tracedat {
namespace {

uint32_t AlignTo4(uint32_t size) { return (size + 3) & ~3u; }

}  // namespace

PageEncoder::PageEncoder() : own_(kPageSize, 0), page_(own_.data()) {}

uint32_t PageEncoder::MaxDataSize() { return kPageSize - kPageHeaderSize - kLongSize - 8; }

void PageEncoder::PutU32(uint32_t value) {
  std::memcpy(page_ + kPageHeaderSize + used_, &value, sizeof(value));
  used_ += sizeof(value);
}

void PageEncoder::PutEventHeader(uint32_t type_len, uint32_t delta) {
  PutU32(type_len | (delta << kTypeLenBits));
}

bool PageEncoder::AppendInGeneral(uint64_t timestamp, std::span<const uint8_t> data) {
  if (data.size() > MaxDataSize()) return false;
  uint32_t padded = AlignTo4(static_cast<uint32_t>(data.size()));
  bool small = !data.empty() && data.size() <= kSmallDataLimit;
  uint32_t event_size = (small ? 4 : 8) + padded;

  bool first = empty();
  // A timestamp below the previous one is clamped: deltas cannot be negative.
  uint64_t delta = first || timestamp < last_timestamp_ ? 0 : timestamp - last_timestamp_;
  bool extend = delta > kMaxTimeDelta;
  if (used_ + event_size + (extend ? 8 : 0) > room_) return false;

  if (first) std::memcpy(page_, &timestamp, sizeof(timestamp));
  if (extend) {
    // The whole delta goes into the extend; the event itself then has 0.
    PutEventHeader(kTypeTimeExtend, static_cast<uint32_t>(delta & kMaxTimeDelta));
    PutU32(static_cast<uint32_t>(delta >> kTimeDeltaBits));
    delta = 0;
  }
  if (small) {
    PutEventHeader(padded / 4, static_cast<uint32_t>(delta));
  } else {
    PutEventHeader(0, static_cast<uint32_t>(delta));
    PutU32(padded + 4);  // the length word counts itself
  }
  uint8_t* at = page_ + kPageHeaderSize + used_;
  if (!data.empty()) std::memcpy(at, data.data(), data.size());
  if (padded > data.size()) std::memset(at + data.size(), 0, padded - data.size());
  used_ += padded;
  if (first || timestamp > last_timestamp_) last_timestamp_ = timestamp;
  return true;
}

void PageEncoder::MarkLostBefore(uint64_t count) {
  lost_marked_ = true;
  room_ = kFullRoom - kLongSize;
  lost_before_ = count;
}

void PageEncoder::FinishInto(uint8_t* out) {
  uint64_t commit = used_;
  uint32_t end = kPageHeaderSize + used_;
  if (lost_marked_) {
    commit |= kCommitMissedEvents | kCommitMissedStored;
    std::memcpy(page_ + end, &lost_before_, sizeof(lost_before_));
    end += sizeof(lost_before_);
  }
  std::memcpy(page_ + 8, &commit, sizeof(commit));
  if (out != page_) std::memcpy(out, page_, end);
  std::memset(out + end, 0, kPageSize - end);
  page_ = own_.data();
  used_ = 0;
  room_ = kFullRoom;
  lost_marked_ = false;
  lost_before_ = 0;
}

}  // namespace udiag::record::tracedat
