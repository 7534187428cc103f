// Builds one ftrace ring-buffer page (formats.md §1.6): a base timestamp, the
// commit word and the events, each with a 27-bit time delta from the one
// before, a time-extend event in front when the delta does not fit, and the
// explicit-length encoding for data longer than 112 bytes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace udiag::record::tracedat {

class PageEncoder {
 public:
  PageEncoder();

  // Appends a record's data (common header + payload) stamped `timestamp`,
  // which must not be below the previous one on this page. Returns false,
  // changing nothing, when it does not fit; the caller then finishes the page
  // and appends to the next one.
  bool Append(uint64_t timestamp, std::span<const uint8_t> data);

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
  // Bytes left for events, keeping room for the stored lost count.
  uint32_t Room() const;
  void PutEventHeader(uint32_t type_len, uint32_t delta);
  void PutU32(uint32_t value);

  std::vector<uint8_t> page_;  // only the header and used_ bytes after it are current
  uint32_t used_ = 0;  // bytes of event data written after the page header
  uint64_t last_timestamp_ = 0;
  uint64_t lost_before_ = 0;
  bool lost_marked_ = false;
};

}  // namespace udiag::record::tracedat
