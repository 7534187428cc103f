#include "record/tracedat/page_decoder.h"

#include <cerrno>
#include <optional>

#include "record/tracedat/byte_io.h"
#include "record/tracedat/tracedat_layout.h"

namespace udiag::record::tracedat {
namespace {

// A kernel long: the commit word and the stored lost count.
std::optional<uint64_t> ReadLong(ByteCursor& cursor, uint32_t long_size) {
  if (long_size == 8) return cursor.Get<uint64_t>();
  std::optional<uint32_t> value = cursor.Get<uint32_t>();
  if (!value) return std::nullopt;
  return *value;
}

std::span<const uint8_t> AsBytes(std::string_view body) {
  return {reinterpret_cast<const uint8_t*>(body.data()), body.size()};
}

}  // namespace

int DecodePage(std::span<const uint8_t> page, uint32_t long_size, DecodedPage* out) {
  out->lost_before = 0;
  out->records.clear();
  if (long_size != 4 && long_size != 8) return EINVAL;
  ByteCursor header(page);
  std::optional<uint64_t> timestamp = header.Get<uint64_t>();
  std::optional<uint64_t> commit = ReadLong(header, long_size);
  if (!timestamp || !commit) return EINVAL;
  uint64_t header_size = header.position();
  uint64_t data_size = *commit & kCommitSizeMask;
  if (data_size > page.size() - header_size) return EINVAL;

  std::span<const uint8_t> data = page.subspan(header_size, data_size);
  if (*commit & kCommitMissedEvents) {
    out->lost_before = 1;
    if (*commit & kCommitMissedStored) {
      ByteCursor after(page.subspan(header_size + data_size));
      std::optional<uint64_t> count = ReadLong(after, long_size);
      if (!count) return EINVAL;
      out->lost_before = *count;
    }
  }

  ByteCursor events(data);
  uint64_t now = *timestamp;
  while (events.position() < data.size()) {
    std::optional<uint32_t> event_header = events.Get<uint32_t>();
    if (!event_header) return EINVAL;
    uint32_t type_len = *event_header & ((1u << kTypeLenBits) - 1);
    uint32_t delta = *event_header >> kTypeLenBits;
    if (type_len >= 1 && type_len <= kMaxSmallTypeLen) {
      std::optional<std::string_view> body = events.GetBytes(type_len * 4);
      if (!body) return EINVAL;
      now += delta;
      out->records.push_back({now, AsBytes(*body)});
      continue;
    }
    if (type_len == kTypePadding && delta == 0) break;  // the rest of the page is unused
    std::optional<uint32_t> array = events.Get<uint32_t>();
    if (!array) return EINVAL;
    switch (type_len) {
      case 0: {
        if (*array < 4) return EINVAL;
        std::optional<std::string_view> body = events.GetBytes(*array - 4);
        if (!body) return EINVAL;
        now += delta;
        out->records.push_back({now, AsBytes(*body)});
        break;
      }
      case kTypePadding:  // a discarded event; its delta counts, as in kbuffer
        if (*array < 4 || !events.GetBytes(*array - 4)) return EINVAL;
        now += delta;
        break;
      case kTypeTimeExtend:
        now += (static_cast<uint64_t>(*array) << kTimeDeltaBits) + delta;
        break;
      case kTypeTimeStamp:
        now = (static_cast<uint64_t>(*array) << kTimeDeltaBits) | delta;
        break;
    }
  }
  return 0;
}

}  // namespace udiag::record::tracedat
