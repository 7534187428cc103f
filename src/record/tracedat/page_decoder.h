// Reads one ftrace ring-buffer page (formats.md §1.6) back into timestamped
// records: the inverse of PageEncoder, plus the event kinds only the kernel
// writes (padding and absolute timestamps).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "record/tracedat/tracedat_layout.h"

namespace udiag::record::tracedat {

struct PageRecord {
  uint64_t timestamp = 0;
  std::span<const uint8_t> data;  // points into the page; padded to 4 bytes
};

struct DecodedPage {
  // Events lost just before this page: the stored count, or 1 when the page
  // says events were lost but not how many.
  uint64_t lost_before = 0;
  std::vector<PageRecord> records;
};

// Walks `page` (a whole page as in the file) whose commit word is
// `long_size` (4 or 8) bytes: sets *lost_before and calls visit(PageRecord)
// for each record in order, allocating nothing. Returns 0 or EINVAL if the
// page is malformed (an event or the stored lost count crossing the
// committed size or page); records before the fault have been visited.
template <typename Visit>
int ForEachPageRecord(std::span<const uint8_t> page, uint32_t long_size, uint64_t* lost_before, Visit&& visit);

// Decodes `page` into `out`, as ForEachPageRecord walks it.
int DecodePage(std::span<const uint8_t> page, uint32_t long_size, DecodedPage* out);

// The page's events, after its header: the data span and base timestamp,
// with *lost_before set, without reading the events; EINVAL for a malformed
// header.
int ReadPageHeader(std::span<const uint8_t> page, uint32_t long_size, uint64_t* lost_before,
                   std::span<const uint8_t>* events, uint64_t* timestamp);

template <typename Visit>
int ForEachPageRecord(std::span<const uint8_t> page, uint32_t long_size, uint64_t* lost_before, Visit&& visit) {
  std::span<const uint8_t> data;
  uint64_t now = 0;
  if (int err = ReadPageHeader(page, long_size, lost_before, &data, &now)) return err;
  size_t at = 0;
  auto word = [&](uint32_t* value) {
    if (data.size() - at < 4) return false;
    std::memcpy(value, data.data() + at, 4);
    at += 4;
    return true;
  };
  while (at < data.size()) {
    uint32_t event_header, array;
    if (!word(&event_header)) return EINVAL;
    const uint32_t type_len = event_header & ((1u << kTypeLenBits) - 1);
    const uint32_t delta = event_header >> kTypeLenBits;
    if (type_len >= 1 && type_len <= kMaxSmallTypeLen) {
      if (data.size() - at < type_len * 4) return EINVAL;
      now += delta;
      visit(PageRecord{now, data.subspan(at, type_len * 4)});
      at += type_len * 4;
      continue;
    }
    if (type_len == kTypePadding && delta == 0) break;  // the rest of the page is unused
    if (!word(&array)) return EINVAL;
    switch (type_len) {
      case 0:  // the length word counts itself
      case kTypePadding:  // a discarded event; its delta counts, as in kbuffer
        if (array < 4 || data.size() - at < array - 4) return EINVAL;
        now += delta;
        if (type_len == 0) visit(PageRecord{now, data.subspan(at, array - 4)});
        at += array - 4;
        break;
      case kTypeTimeExtend:
        now += (static_cast<uint64_t>(array) << kTimeDeltaBits) + delta;
        break;
      case kTypeTimeStamp:
        now = (static_cast<uint64_t>(array) << kTimeDeltaBits) | delta;
        break;
    }
  }
  return 0;
}

}  // namespace udiag::record::tracedat
