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
  // `page_` points into `own_` or at a caller's page: a copy would share them.
  PageEncoder(const PageEncoder&) = delete;
  PageEncoder& operator=(const PageEncoder&) = delete;
  PageEncoder(PageEncoder&&) = default;
  PageEncoder& operator=(PageEncoder&&) = default;

  // Appends a record's data (common header + payload) stamped `timestamp`,
  // which must not be below the previous one on this page. Returns false,
  // changing nothing, when it does not fit; the caller then finishes the page
  // and appends to the next one.
  bool Append(uint64_t timestamp, std::span<const uint8_t> data) {
    uint32_t size = static_cast<uint32_t>(data.size());
    if (uint8_t* at = Reserve(timestamp, size)) {
      base::CopyShort(at, data.data(), size);
      Commit();
      return true;
    }
    return AppendInGeneral(timestamp, data);
  }

  // Append in two steps, for a caller that writes the data in place: where
  // `size` bytes of data stamped `timestamp` go, or null when the record
  // needs the general way (Append) or does not fit. Only Commit() keeps it;
  // another Reserve replaces it.
  // Most records are small and follow one another closely: one header word
  // and the data.
  uint8_t* Reserve(uint64_t timestamp, uint32_t size) {
    if (size - 1 >= kSmallDataLimit) return nullptr;
    uint64_t delta = 0;
    if (used_ != 0) {
      if (timestamp < last_timestamp_ || timestamp - last_timestamp_ > kMaxTimeDelta) return nullptr;
      delta = timestamp - last_timestamp_;
    }
    uint32_t padded = (size + 3) & ~3u;
    if (used_ + 4 + padded > room_) return nullptr;
    if (used_ == 0) std::memcpy(page_, &timestamp, sizeof(timestamp));  // the page's base
    uint8_t* at = page_ + kPageHeaderSize + used_;
    uint32_t header = padded / 4 | static_cast<uint32_t>(delta) << kTypeLenBits;
    const uint32_t zero = 0;
    std::memcpy(at, &header, sizeof(header));
    std::memcpy(at + padded, &zero, sizeof(zero));  // the padding (the data overwrites the rest)
    reserved_bytes_ = 4 + padded;
    reserved_timestamp_ = timestamp;
    return at + 4;
  }
  void Commit() {
    used_ += reserved_bytes_;
    last_timestamp_ = reserved_timestamp_;
  }

  // Flags the page as following `count` lost events (stored after the data,
  // as the kernel does). Only on an empty page.
  void MarkLostBefore(uint64_t count);

  bool empty() const { return used_ == 0; }
  // Of the page being built: bytes of event data, and the losses marked.
  uint32_t data_bytes() const { return used_; }
  uint64_t lost_before() const { return lost_marked_ ? lost_before_ : 0; }

  // Builds the next page in `page` (kPageSize bytes, left as they were
  // until FinishInto(page)) instead of the encoder's own buffer: a page
  // built where it is kept need not be copied there. Only while empty.
  void BuildIn(uint8_t* page) { page_ = page; }

  // Writes the finished page (kPageSize bytes, zero-filled tail) to `out`,
  // which may be where it was built; the encoder is empty afterwards, and
  // builds in its own buffer again.
  void FinishInto(uint8_t* out);

  // Longest data that fits in an empty page (with room for a lost count).
  static uint32_t MaxDataSize();

 private:
  static constexpr uint32_t kSmallDataLimit = kMaxSmallTypeLen * 4;
  static constexpr uint32_t kFullRoom = kPageSize - kPageHeaderSize;

  bool AppendInGeneral(uint64_t timestamp, std::span<const uint8_t> data);
  void PutEventHeader(uint32_t type_len, uint32_t delta);
  void PutU32(uint32_t value);

  std::vector<uint8_t> own_;
  uint8_t* page_;  // own_ or BuildIn's page: only the header and used_ bytes after it are current
  uint32_t used_ = 0;  // bytes of event data written after the page header
  uint32_t room_ = kFullRoom;  // bytes for events, less the stored lost count if marked
  uint64_t last_timestamp_ = 0;
  uint32_t reserved_bytes_ = 0;  // of the last Reserve: event header and padded data
  uint64_t reserved_timestamp_ = 0;
  uint64_t lost_before_ = 0;
  bool lost_marked_ = false;
};

}  // namespace udiag::record::tracedat
