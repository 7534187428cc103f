// Fuzzes the daemon's check of a producer's page that a recording keeps
// whole (src/service/page_check.h): whatever the page holds, a page it
// accepts must be a trace.dat page that readers take as it says, with
// only allowed events, each its thread's, in time order, up to now.
//
// Input: u64 `latest` (the clock reading no time may pass; taken modulo
// 2^32), u32 the line's ns per tick (x 2^-32, below 2^32), then the page's
// bytes (the rest of a 4 KiB page is zero): a 16-byte header and events.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "record/tracedat/page_decoder.h"
#include "service/event_registry.h"
#include "service/page_check.h"

using namespace udiag;

namespace {

constexpr uint32_t kTid = 4242;

void Require(bool holds) {
  if (!holds) abort();
}

// Events 10 (four bytes at least), 11 (a __rel_loc string first) and 12
// (a __data_loc array after four bytes) may be kept whole; others not.
struct Events {
  service::Event plain, rel_string, data_array;
  Events() {
    plain.id = 10;
    plain.desc.min_size = 4;
    rel_string.id = 11;
    rel_string.desc.min_size = 4;
    rel_string.locs.push_back({8, /*relative=*/1, /*is_string=*/1});
    data_array.id = 12;
    data_array.desc.min_size = 8;
    data_array.locs.push_back({12, /*relative=*/0, /*is_string=*/0});
  }
  const service::Event* Of(uint16_t id) const {
    return id == 10 ? &plain : id == 11 ? &rel_string : id == 12 ? &data_array : nullptr;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Events events;
  uint64_t latest = 0;
  uint32_t mult = 0;
  if (size < sizeof(latest) + sizeof(mult)) return 0;
  std::memcpy(&latest, data, sizeof(latest));
  std::memcpy(&mult, data + sizeof(latest), sizeof(mult));
  data += sizeof(latest) + sizeof(mult);
  size -= sizeof(latest) + sizeof(mult);
  latest %= uint64_t{1} << 32;
  alignas(8) static uint8_t page[ring::kRingPageSize];
  std::memset(page, 0, sizeof(page));
  std::memcpy(page, data, std::min<size_t>(size, sizeof(page)));

  const base::TscClock::Line line{0, 1000, mult};
  if (!line.Reaches(latest)) return 0;
  service::CheckedPage checked;
  if (!service::CheckPage(
          page, kTid, latest, [&](uint16_t id) { return events.Of(id); }, line, &checked)) {
    return 0;
  }

  Require(checked.page == page && checked.events > 0 && checked.data_bytes <= ring::kPageRoom);
  Require(checked.type_count >= 1 && checked.type_count <= service::CheckedPage::kMaxTypes);
  uint64_t lost = 1;
  uint32_t records = 0;
  uint64_t last_ns = checked.first_ns;
  const int error = record::tracedat::ForEachPageRecord(
      {page, sizeof(page)}, record::tracedat::kLongSize, &lost,
      [&](const record::tracedat::PageRecord& record) {
        ++records;
        Require(record.timestamp >= last_ns && record.timestamp <= line.At(latest));
        last_ns = record.timestamp;
        Require(record.data.size() >= ring::kCommonHeaderBytes);
        uint16_t type;
        uint32_t pid;
        std::memcpy(&type, record.data.data(), sizeof(type));
        std::memcpy(&pid, record.data.data() + 4, sizeof(pid));
        Require(record.data[2] == 0 && record.data[3] == 0 && pid == kTid);
        const service::Event* event = events.Of(type);
        Require(event != nullptr);
        Require(checked.only_type == 0 || checked.only_type == type);
        bool listed = false;
        for (uint32_t i = 0; i < checked.type_count; ++i) listed |= checked.types[i] == type;
        Require(listed);
        const auto record_size = static_cast<uint32_t>(record.data.size());
        Require(record_size >= ring::kCommonHeaderBytes + event->desc.min_size);
        Require(schema::LocsValid(event->locs.data(), static_cast<uint32_t>(event->locs.size()),
                                  record.data.data(), record_size));
      });
  Require(error == 0 && lost == 0 && records == checked.events);
  Require(last_ns <= checked.first_ns + checked.span_ns);  // a trailing time extend counts in the span
  for (size_t at = record::tracedat::kPageHeaderSize + checked.data_bytes; at < sizeof(page); ++at) {
    Require(page[at] == 0);
  }
  return 0;
}
