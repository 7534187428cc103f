// The collecting end of `udiag mmiotrace`: listens on
// <daemon dir>/mmiotrace-<pid>.sock for the records of every traced process
// (and for `udiag mark`), merges them by timestamp, and writes the mmiotrace
// log: VERSION, the PCIDEV lines of /proc/bus/pci/devices, then the records.
// Records are held kMergeLag before they are written, so those of threads and
// processes that ship a little later still land in time order.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/error_or.h"
#include "base/scoped_fd.h"
#include "mmiotrace/record.h"
#include "mmiotrace/trace_events.h"

namespace udiag::mmiotrace {

struct SessionSummary {
  uint64_t accesses = 0;  // R, W and UNKNOWN lines
  uint64_t mappings = 0;  // MAP lines
  uint64_t marks = 0;
  uint64_t lost = 0;      // records traced processes dropped
};

class Session {
 public:
  static constexpr std::chrono::milliseconds kMergeLag{200};

  // Listens in `daemon_dir` (created, mode 0700, if missing) and creates the
  // shared map id counter; writes the log to `out_fd` (not owned).
  static base::ErrorOr<std::unique_ptr<Session>> Create(const std::string& daemon_dir, int out_fd);
  ~Session();  // removes the socket and the id counter

  // For the command's $UDIAG_MMIOTRACE_SESSION.
  const std::string& socket_path() const { return socket_path_; }

  // Writes the header, then serves until `command_exited()` has returned true
  // and every traced process has disconnected; writes what is left. Returns
  // 0 or the errno of a failed write of the log.
  int Serve(const std::function<bool()>& command_exited);

  const SessionSummary& summary() const { return summary_; }

 private:
  Session(std::string socket_path, base::ScopedFd listener, int out_fd)
      : socket_path_(std::move(socket_path)), listener_(std::move(listener)), out_fd_(out_fd) {}

  void AcceptAll();
  // False once the connection is closed or sent something malformed.
  bool ReceiveAll(int fd);
  void Take(const std::vector<uint8_t>& message);
  void Add(uint64_t ts_ns, std::string line);
  // Writes the held lines stamped before `ts_ns`.
  void WriteOlderThan(uint64_t ts_ns);
  void WriteOut(const std::string& text);

  std::string socket_path_;
  base::ScopedFd listener_;
  int out_fd_;
  int write_error_ = 0;
  std::vector<base::ScopedFd> connections_;
  std::map<std::pair<uint64_t, uint64_t>, std::string> held_;  // (ts, arrival) -> line
  uint64_t arrivals_ = 0;
  uint64_t lost_unreported_ = 0;
  SessionSummary summary_;
  TraceEvents events_;  // mmiotrace_mark for `udiag mark`
};

}  // namespace udiag::mmiotrace
