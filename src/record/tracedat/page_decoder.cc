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

}  // namespace

int ReadPageHeader(std::span<const uint8_t> page, uint32_t long_size, uint64_t* lost_before,
                   std::span<const uint8_t>* events, uint64_t* timestamp) {
  *lost_before = 0;
  if (long_size != 4 && long_size != 8) return EINVAL;
  ByteCursor header(page);
  std::optional<uint64_t> base = header.Get<uint64_t>();
  std::optional<uint64_t> commit = ReadLong(header, long_size);
  if (!base || !commit) return EINVAL;
  uint64_t header_size = header.position();
  uint64_t data_size = *commit & kCommitSizeMask;
  if (data_size > page.size() - header_size) return EINVAL;
  if (*commit & kCommitMissedEvents) {
    *lost_before = 1;
    if (*commit & kCommitMissedStored) {
      ByteCursor after(page.subspan(header_size + data_size));
      std::optional<uint64_t> count = ReadLong(after, long_size);
      if (!count) return EINVAL;
      *lost_before = *count;
    }
  }
  *events = page.subspan(header_size, data_size);
  *timestamp = *base;
  return 0;
}


int DecodePage(std::span<const uint8_t> page, uint32_t long_size, DecodedPage* out) {
  out->records.clear();
  return ForEachPageRecord(page, long_size, &out->lost_before,
                           [&](const PageRecord& record) { out->records.push_back(record); });
}

}  // namespace udiag::record::tracedat
