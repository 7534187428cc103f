// What traced processes and `udiag mark` send to a `udiag mmiotrace`
// session over its SOCK_SEQPACKET socket: one message is a WireHeader and,
// for kRecords, `count` Records; for kMark, the text.
// The environment of a traced process names the session (see preload.cc).
#pragma once

#include <cstdint>
#include <string>

namespace udiag::mmiotrace {

enum class WireType : uint32_t {
  kRecords = 1,  // count records follow
  kLost = 2,     // value: records dropped since the last kLost
  kMark = 3,     // value: CLOCK_MONOTONIC ns of the mark; count: pid; the text follows
};

struct WireHeader {
  WireType type;
  uint32_t count;
  uint64_t value;
};
static_assert(sizeof(WireHeader) == 16);

// Records per kRecords message: stays under base::kMaxMessageBytes.
inline constexpr uint32_t kRecordsPerMessage = 1024;

// Environment variables the session sets for the command.
inline constexpr const char* kEnvSession = "UDIAG_MMIOTRACE_SESSION";  // socket path
inline constexpr const char* kEnvMaps = "UDIAG_MMIOTRACE_MAPS";        // --map paths, ':'-separated
inline constexpr const char* kEnvMode = "UDIAG_MMIOTRACE_MODE";        // emulate|rebase-step|single-step

// Files next to the socket: "<socket>.ids" holds the session's map id
// counter (a uint32 every traced process increments, so ids are unique
// across processes).
inline std::string IdsPath(const std::string& socket_path) { return socket_path + ".ids"; }

// Session sockets live in the daemon directory as mmiotrace-<pid>.sock, so
// `udiag mark` finds every session of the user there.
inline constexpr const char* kSocketPrefix = "mmiotrace-";
inline constexpr const char* kSocketSuffix = ".sock";

}  // namespace udiag::mmiotrace
