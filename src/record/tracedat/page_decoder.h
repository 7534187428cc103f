// Reads one ftrace ring-buffer page (formats.md §1.6) back into timestamped
// records: the inverse of PageEncoder, plus the event kinds only the kernel
// writes (padding and absolute timestamps).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

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

// Decodes `page` (a whole page as in the file) whose commit word is
// `long_size` (4 or 8) bytes. Returns 0 or EINVAL if the page is malformed
// (an event or the stored lost count crossing the committed size or page).
int DecodePage(std::span<const uint8_t> page, uint32_t long_size, DecodedPage* out);

}  // namespace udiag::record::tracedat
