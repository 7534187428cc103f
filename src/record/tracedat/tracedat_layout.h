// The byte layout of a trace-cmd trace.dat file, version 6 (and the parts of
// uncompressed version 7 the reader understands), as described in
// ../shared/spec/formats.md §1. Everything is little-endian with an 8-byte
// long; the writer only runs on such hosts.
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>

namespace udiag::record::tracedat {

static_assert(std::endian::native == std::endian::little,
              "trace.dat files are written in host byte order and flagged little-endian");

inline constexpr std::string_view kMagic{"\x17\x08\x44tracing", 10};
inline constexpr uint32_t kPageSize = 4096;
inline constexpr uint32_t kLongSize = 8;

// Ring-buffer page: u64 base timestamp, then the "commit" long, then data.
inline constexpr uint32_t kPageHeaderSize = 8 + kLongSize;
inline constexpr uint64_t kCommitSizeMask = (1u << 27) - 1;
inline constexpr uint64_t kCommitMissedEvents = 1ull << 31;  // events lost before this page
inline constexpr uint64_t kCommitMissedStored = 1ull << 30;  // count stored after the data

// Event header: u32 with type_len in the low 5 bits, time delta in the rest.
inline constexpr uint32_t kTypeLenBits = 5;
inline constexpr uint32_t kTimeDeltaBits = 27;
inline constexpr uint32_t kMaxSmallTypeLen = 28;  // data of type_len * 4 bytes
inline constexpr uint32_t kTypePadding = 29;
inline constexpr uint32_t kTypeTimeExtend = 30;
inline constexpr uint32_t kTypeTimeStamp = 31;
inline constexpr uint64_t kMaxTimeDelta = (1ull << kTimeDeltaBits) - 1;

// The texts of events/header_page and events/header_event for 4096-byte pages.
inline constexpr std::string_view kHeaderPageText =
    "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
    "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
    "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
    "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
inline constexpr std::string_view kHeaderEventText =
    "# compressed entry header\n"
    "\ttype_len    :    5 bits\n"
    "\ttime_delta  :   27 bits\n"
    "\tarray       :   32 bits\n"
    "\n"
    "\tpadding     : type == 29\n"
    "\ttime_extend : type == 30\n"
    "\ttime_stamp : type == 31\n"
    "\tdata max type_len  == 28\n";

// Option ids (the same numbers in v6 and v7).
enum OptionId : uint16_t {
  kOptionDone = 0,     // also the v7 options section id
  kOptionBuffer = 3,   // v7: a buffer's clock and per-cpu page offsets
  kOptionTraceClock = 4,  // the trace_clock text, NUL-terminated
  kOptionUname = 5,
  kOptionCpuCount = 8,
  // v7: the offsets of the metadata sections (each section has this id).
  kOptionHeaderInfo = 16,
  kOptionFtraceEvents = 17,
  kOptionEventFormats = 18,
  kOptionCmdlines = 21,
  kOptionVersion = 9,
  // udiag's own option: "tid pid\n" lines, one per task, so a reader can
  // restore each thread's process. trace-cmd skips ids it does not know.
  kOptionUdiagTasks = 0x7564,
  // udiag's own option: the decimal count of events lost after the last record.
  kOptionUdiagLostAtEnd = 0x7565,
  // udiag's own option: "id name\n" lines giving the real name of each event
  // whose format text carries a tokenisable stand-in (see TraceDatEventName).
  kOptionUdiagEventNames = 0x7566,
  // udiag's own option, only while a recording is under way: the decimal
  // size of each cpu's region (region_layout.h). `udiag recover` looks for
  // pages written after the last header in a cpu's region only when the
  // file has it and the cpu's pages are still at their region's start.
  kOptionUdiagRegionBytes = 0x7567,
  // What `udiag recover` turns kOptionUdiagRegionBytes into, in place, once
  // the file is finished: the same text under an id readers skip.
  kOptionUdiagRecovered = 0x7568,
};

// libtraceevent reads the `name:` of a format as one identifier token, so a
// kernel-style multi-format name like "test.1f" makes the whole format
// unreadable. The format text in the file gets this name instead: every byte
// outside [A-Za-z0-9_] becomes '_'.
inline std::string TraceDatEventName(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!word) c = '_';
  }
  return out;
}

}  // namespace udiag::record::tracedat
