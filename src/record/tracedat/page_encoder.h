// Builds one ftrace ring-buffer page (formats.md §1.6): a base timestamp, the
// commit word and the events, each with a 27-bit time delta from the one
// before, a time-extend event in front when the delta does not fit, and the
// explicit-length encoding for data longer than 112 bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "base/short_copy.h"
#include "record/tracedat/tracedat_layout.h"

namespace udiag::record::tracedat {

class PageEncoder {
 public:
  PageEncoder();

  // Appends a record's data (common header + payload) stamped `timestamp`,
  // which must not be below the previous one on this page. Returns false,
  // changing nothing, when it does not fit; the caller then finishes the page
  // and appends to the next one.
  bool Append(uint64_t timestamp, std::span<const uint8_t> data) {
    // Most records are small and follow one another closely on a started
    // page: one header word and the data. The rest goes the general way.
    uint32_t size = static_cast<uint32_t>(data.size());
    if (used_ == 0 || size - 1 >= kSmallDataLimit || timestamp < last_timestamp_ ||
        timestamp - last_timestamp_ > kMaxTimeDelta) {
      return AppendInGeneral(timestamp, data);
    }
    uint32_t padded = (size + 3) & ~3u;
    if (used_ + 4 + padded > room_) return false;
    uint8_t* at = page_.data() + kPageHeaderSize + used_;
    uint32_t header = padded / 4 | static_cast<uint32_t>(timestamp - last_timestamp_) << kTypeLenBits;
    const uint32_t zero = 0;
    std::memcpy(at, &header, sizeof(header));
    std::memcpy(at + padded, &zero, sizeof(zero));  // the padding (the data overwrites the rest)
    base::CopyShort(at + 4, data.data(), size);
    used_ += 4 + padded;
    last_timestamp_ = timestamp;
    return true;
  }

  // Flags the page as following `count` lost events (stored after the data,
  // as the kernel does). Only on an empty page.
  void MarkLostBefore(uint64_t count);

  bool empty() const { return used_ == 0; }

  // Writes the finished page (kPageSize bytes, zero-filled tail) to `out`;
  // the encoder is empty afterwards.
  void FinishInto(uint8_t* out);

  // Longest data that fits in an empty page (with room for a lost count).
  static uint32_t MaxDataSize();

 private:
  static constexpr uint32_t kSmallDataLimit = kMaxSmallTypeLen * 4;
  static constexpr uint32_t kFullRoom = kPageSize - kPageHeaderSize;

  bool AppendInGeneral(uint64_t timestamp, std::span<const uint8_t> data);
  void PutEventHeader(uint32_t type_len, uint32_t delta);
  void PutU32(uint32_t value);

  std::vector<uint8_t> page_;  // only the header and used_ bytes after it are current
  uint32_t used_ = 0;  // bytes of event data written after the page header
  uint32_t room_ = kFullRoom;  // bytes for events, less the stored lost count if marked
  uint64_t last_timestamp_ = 0;
  uint64_t lost_before_ = 0;
  bool lost_marked_ = false;
};

}  // namespace udiag::record::tracedat
