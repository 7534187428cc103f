// One cpu's ring-buffer pages on their way into a trace.dat file: records are
// encoded into pages, and each full page is appended to an unlinked
// temporary file, so memory stays at one page per cpu however long the trace.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/error_or.h"
#include "base/scoped_fd.h"
#include "record/tracedat/page_encoder.h"

namespace udiag::record::tracedat {

class CpuSpool {
 public:
  // The temporary file is created in `directory` (O_TMPFILE, else a
  // mkstemp name unlinked at once).
  static base::ErrorOr<std::unique_ptr<CpuSpool>> Create(const std::string& directory);

  // Adds a record after `lost_before` lost events. A record longer than a
  // page can hold, or shorter than the common header, is dropped and
  // counted as lost before the next one.
  // Returns 0 or the errno of a failed spool write.
  int Add(uint64_t timestamp, uint64_t lost_before, std::span<const uint8_t> data);

  // Writes out the page being filled. Returns 0 or an errno.
  int Flush();

  // Events lost after the last record (dropped records not yet followed by one).
  uint64_t lost_at_end() const { return pending_lost_; }

  // Bytes of the spooled pages (a multiple of the page size), after Flush.
  uint64_t size() const { return size_; }

  // Appends the spooled pages to `out_fd` at its current position. Returns 0
  // or an errno.
  int CopyTo(int out_fd) const;

 private:
  explicit CpuSpool(base::ScopedFd file) : file_(std::move(file)) {}

  base::ScopedFd file_;
  PageEncoder page_;
  uint64_t size_ = 0;
  uint64_t pending_lost_ = 0;
};

}  // namespace udiag::record::tracedat
