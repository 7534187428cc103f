// `udiag export`: events from every process (or a recorded trace) into
// ClickHouse, one typed table per event. See docs/fleet.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace udiag::cli {

struct ExportOptions {
  std::string dir;                   // resolved; a private daemon is started if none serves it
  std::string url;                   // http://HOST:8123
  std::string database = "udiag";
  std::string host;                  // default: this machine's name (or the trace's, with --from)
  std::string cluster;               // non-empty: local MergeTree + Distributed tables
  std::string from;                  // a trace.dat or CTF to load instead of live events
  std::string spool = "udiag-spool";
  uint64_t spool_mb = 256;
  uint32_t retry_s = 30;             // at the end, how long to wait for an unreachable server
  bool create_schema = false;        // create the database and udiag_lost, then exit
  std::vector<std::string> events;   // auto-enable globs; empty: every event
  uint32_t size_kb = 16384;
  std::vector<std::string> command;  // empty: export until SIGINT/SIGTERM
};

// The command's exit status, as Record's; kExitFailure also when batches are
// left in the spool at the end.
int Export(const ExportOptions& options);

}  // namespace udiag::cli
