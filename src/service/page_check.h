// Checking a producer's ring page that a recording keeps whole, in the
// daemon's own copy of it, and rewriting it there as trace.dat stores it.
// The producer may have written anything: a page that is not exactly what
// an honest producer writes is refused, and its events are then taken one
// by one, each checked as any record is (ring_reader.h, server_ring_drain.cc).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>

#include "base/tsc_clock.h"
#include "record/tracedat/tracedat_layout.h"
#include "ring/page_event.h"
#include "schema/loc_check.h"

namespace udiag::service {

struct CheckedPage {
  static constexpr uint32_t kMaxTypes = 8;
  uint8_t* page = nullptr;  // kRingPageSize bytes, a trace.dat page
  uint32_t data_bytes = 0;  // of events after its header; at most ring::kPageRoom
  uint32_t events = 0;
  uint32_t only_type = 0;  // the id of every event on it, or 0 when they are of several
  uint32_t type_count = 0;
  uint16_t types[kMaxTypes] = {};  // the ids on it, each once
  uint64_t span_ns = 0;            // from its first event to its last
  uint64_t first_ns = 0;           // its start, in ns, as its header now says
};

// The usual page holds events of one type and one short size (type_len
// 1..28), back to back. Each event's place is then known before it is
// read, so the checks of one event do not wait for the one before it to be
// decoded, as CheckPage's walk from event to event must (page_check_bench:
// 2.3 against 3.7 ns an event). Reads the page without writing to it to
// find out whether it is such a page (nullopt if not); if so, checks and
// rewrites its events as CheckPage does, from *time (the page's start, in
// the producer's clock) and *last_ns (the same in ns) on, leaves both at
// its last event, and says whether they pass.
template <typename EventOf, typename ToNs>
std::optional<bool> CheckEventsOfOneSize(uint8_t* events, uint32_t bytes, uint32_t tid, EventOf&& event_of,
                                         ToNs to_ns, uint64_t* time_out, uint64_t* last_ns_out,
                                         CheckedPage* checked) {
  uint32_t first_word;
  uint16_t type;
  std::memcpy(&first_word, events, sizeof(first_word));
  std::memcpy(&type, events + 4, sizeof(type));
  const uint32_t type_len = first_word & ring::kTypeLenMask;
  const uint32_t stride = 4 + type_len * 4;
  if (type_len - 1 >= ring::kMaxSmallTypeLen || bytes % stride != 0) return std::nullopt;
  uint8_t* const end = events + bytes;
  // The first word's type_len and the type, in one 64-bit compare.
  const uint64_t same_mask = 0xFFFF'0000'0000'0000 >> 16 | ring::kTypeLenMask;
  uint64_t same;
  std::memcpy(&same, events, sizeof(same));
  same &= same_mask;
  for (uint8_t* at = events + stride; at != end; at += stride) {
    uint64_t head;
    std::memcpy(&head, at, sizeof(head));
    if ((head & same_mask) != same) return std::nullopt;
  }

  const auto* event = event_of(type);
  if (event == nullptr || type_len * 4 < ring::kCommonHeaderBytes + event->desc.min_size) return false;
  const uint64_t common = type | uint64_t{tid} << 32;  // flags and preempt count 0
  uint64_t time = *time_out, last_ns = *last_ns_out;   // in registers, which the page's stores cannot alias
  for (uint8_t* at = events; at != end; at += stride) {
    uint32_t word;
    std::memcpy(&word, at, sizeof(word));
    time += word >> ring::kTypeLenBits;
    const uint64_t ns = to_ns(time);
    const uint64_t delta = ns - last_ns;
    if (delta > ring::kMaxTimeDelta) return false;
    last_ns = ns;
    word = type_len | static_cast<uint32_t>(delta) << ring::kTypeLenBits;
    std::memcpy(at, &word, sizeof(word));
    std::memcpy(at + 4, &common, sizeof(common));
  }
  if (!event->locs.empty()) {
    for (uint8_t* at = events; at != end; at += stride) {
      if (!schema::LocsValid(event->locs.data(), static_cast<uint32_t>(event->locs.size()), at + 4,
                             type_len * 4)) {
        return false;
      }
    }
  }
  checked->events = bytes / stride;
  checked->only_type = type;
  checked->type_count = 1;
  checked->types[0] = type;
  *time_out = time;
  *last_ns_out = last_ns;
  return true;
}

// Checks the copy of a page at `page` and rewrites it in place: times in ns
// (along `line` from the producer's clock readings, never above `latest`,
// which the caller made sure `line` reaches), each
// event's common_pid `tid` and flags 0, the commit word the bytes of its
// events, the rest of the page zeros. `event_of(id)` is the Event that id
// is (with its min_size and loc words) if this page's events may be kept
// whole, else null. False, with the copy half rewritten, when the page is
// refused: an event that is not whole or not allowed, a time above
// `latest` or a start below the line's, a delta too large once in ns, more
// than kMaxTypes ids, no room after the events for a lost count, or no
// event at all.
template <typename EventOf>
bool CheckPage(uint8_t* page, uint32_t tid, uint64_t latest, EventOf&& event_of, const base::TscClock::Line& line,
               CheckedPage* out) {
  // In locals, which the page's stores cannot alias: the compiler keeps them in registers.
  const uint64_t line_tsc = line.tsc, line_ns = line.ns, line_mult = line.mult;
  auto to_ns = [=](uint64_t ticks) { return line_ns + ((ticks - line_tsc) * line_mult >> 32); };
  ring::PageHeader header;
  std::memcpy(&header, page, sizeof(header));
  const auto bytes = static_cast<uint32_t>(header.commit);
  // Times below the line's start would wrap far ahead along it.
  if (bytes > ring::kPageRoom || header.timestamp > latest || header.timestamp < line_tsc) return false;
  uint8_t* const events = page + sizeof(header);
  uint8_t* const end = events + bytes;
  uint64_t time = header.timestamp;
  const uint64_t page_ns = to_ns(time);
  uint64_t last_ns = page_ns;
  CheckedPage checked;
  auto finish = [&] {
    if (checked.events == 0 || time > latest) return false;
    header = {page_ns, bytes};
    std::memcpy(page, &header, sizeof(header));
    std::memset(events + bytes, 0, ring::kPageDataBytes - bytes);
    checked.page = page;
    checked.data_bytes = bytes;
    checked.span_ns = last_ns - page_ns;
    checked.first_ns = page_ns;
    *out = checked;
    return true;
  };
  if (bytes != 0) {
    if (auto passed = CheckEventsOfOneSize(events, bytes, tid, event_of, to_ns, &time, &last_ns, &checked)) {
      return *passed && finish();
    }
  }
  uint16_t last_type = 0;
  decltype(event_of(uint16_t{0})) event = nullptr;
  uint32_t min_data = 0;  // of `event`: the common header and its static fields
  bool has_locs = false;
  // The usual event, a short one (type_len 1..28), is decoded here; the
  // others by DecodePageEvent. `to_ns` never goes back for later ticks
  // (before `latest`), so a delta that wraps is one too large.
  for (uint8_t* at = events; at < end;) {
    uint32_t word;
    std::memcpy(&word, at, sizeof(word));
    const uint32_t type_len = word & ring::kTypeLenMask;
    uint32_t header_bytes = 4;
    uint32_t data_bytes = type_len * 4;
    uint64_t event_delta = word >> ring::kTypeLenBits;
    if (type_len - 1 >= ring::kMaxSmallTypeLen) [[unlikely]] {
      ring::PageEvent e;
      if (!ring::DecodePageEvent(at, static_cast<uint64_t>(end - at), &e)) return false;
      if (e.data_bytes == 0) {  // a time extend: the whole delta, its high part in the second word
        time += e.delta;
        const uint64_t ns = to_ns(time);
        const uint64_t delta = ns - last_ns;
        if (delta >> (ring::kTimeDeltaBits + 32) != 0) return false;
        last_ns = ns;
        const uint32_t words[2] = {ring::kTypeTimeExtend | static_cast<uint32_t>(delta & ring::kMaxTimeDelta)
                                                               << ring::kTypeLenBits,
                                   static_cast<uint32_t>(delta >> ring::kTimeDeltaBits)};
        std::memcpy(at, words, sizeof(words));
        at += e.bytes;
        continue;
      }
      header_bytes = e.bytes - e.data_bytes;
      data_bytes = e.data_bytes;
      event_delta = e.delta;
    } else if (header_bytes + data_bytes > static_cast<uint64_t>(end - at)) {
      return false;
    }
    // No wrap: time starts at most at `latest`, a clock reading, and deltas
    // are below 2^59. A time past `latest` is converted, then refused below.
    time += event_delta;
    const uint64_t ns = to_ns(time);
    const uint64_t delta = ns - last_ns;
    if (delta > ring::kMaxTimeDelta || data_bytes < ring::kCommonHeaderBytes) return false;
    last_ns = ns;
    word = (word & ring::kTypeLenMask) | static_cast<uint32_t>(delta) << ring::kTypeLenBits;
    std::memcpy(at, &word, sizeof(word));
    uint8_t* const record = at + header_bytes;
    uint16_t type;
    std::memcpy(&type, record, sizeof(type));
    if (event == nullptr || type != last_type) {
      if ((event = event_of(type)) == nullptr) return false;
      checked.only_type = checked.events == 0 ? type : 0;  // the first, or a change of type
      last_type = type;
      min_data = ring::kCommonHeaderBytes + event->desc.min_size;
      has_locs = !event->locs.empty();
      bool known = false;
      for (uint32_t i = 0; i < checked.type_count; ++i) known |= checked.types[i] == type;
      if (!known) {
        if (checked.type_count == CheckedPage::kMaxTypes) return false;
        checked.types[checked.type_count++] = type;
      }
    }
    const uint64_t common = type | uint64_t{tid} << 32;  // flags and preempt count 0
    std::memcpy(record, &common, sizeof(common));
    if (data_bytes < min_data ||
        (has_locs && !schema::LocsValid(event->locs.data(), static_cast<uint32_t>(event->locs.size()), record,
                                        data_bytes))) {
      return false;
    }
    ++checked.events;
    at = record + data_bytes;
  }
  return finish();
}

}  // namespace udiag::service
