// One cpu's ring-buffer pages on their way into a trace.dat file: records
// are encoded into pages, and full pages are gathered into blocks that a
// BlockWriter writes in the background, so memory stays at a few blocks
// however long the trace.
//
// A spool writes either from offset 0 of an unlinked temporary file, or into
// a region of the output file itself (region_layout.h), where its pages are
// readable as soon as a header names them and never have to be copied.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/error_or.h"
#include "base/scoped_fd.h"
#include "record/block_writer.h"
#include "record/tracedat/page_encoder.h"
#include "schema/event_description.h"

namespace udiag::record::tracedat {

class CpuSpool {
 public:
  // Spools into an unlinked temporary file created in `directory`
  // (O_TMPFILE, else a mkstemp name unlinked at once).
  static base::ErrorOr<std::unique_ptr<CpuSpool>> CreateTemporary(const std::string& directory,
                                                                  BlockWriter* writer);
  // Spools into `fd` (not owned) from `offset`, at most `capacity` bytes;
  // the writer's Written(`slot`) tells how much of it is on disk.
  static std::unique_ptr<CpuSpool> InRegion(int fd, uint64_t offset, uint64_t capacity, size_t slot,
                                            BlockWriter* writer);
  ~CpuSpool();

  // Adds a record after `lost_before` lost events. A record longer than a
  // page can hold, or shorter than the common header, is dropped and
  // counted as lost before the next one. Write errors surface in
  // BlockWriter::Wait.
  void Add(uint64_t timestamp, uint64_t lost_before, std::span<const uint8_t> data) {
    if (lost_before == 0 && pending_lost_ == 0 && data.size() >= schema::kCommonHeaderSize && page_.Append(timestamp, data)) {
      return;
    }
    AddInGeneral(timestamp, lost_before, data);
  }

  // Adds a whole page (kPageSize bytes) as it is, after the page being filled.
  void AddPage(std::span<const uint8_t> page);

  // False once a page did not fit in the region's capacity (it was dropped,
  // and so is everything after it).
  bool fits() const { return fits_; }

  // Queues the page being filled and the block holding it.
  void Flush();

  // Events lost after the last record (dropped records not yet followed by one).
  uint64_t lost_at_end() const { return pending_lost_; }

  // Bytes of the spooled pages (a multiple of the page size), after Flush.
  uint64_t size() const { return size_; }
  // Of those, the bytes on disk (all of them after a successful Wait).
  uint64_t written() const { return slot_ == BlockProgress::kNone ? size_ : writer_->Written(slot_); }
  uint64_t offset() const { return offset_; }
  int fd() const { return fd_; }

  // After Flush and the writer's Wait: queues a copy of the spooled pages
  // to `out_fd` at `offset` (or BlockWriter::kAtPosition). Returns 0 or the
  // errno of reading the spool.
  int CopyTo(int out_fd, uint64_t offset) const;

 private:
  CpuSpool(base::ScopedFd owned, int fd, uint64_t offset, uint64_t capacity, size_t slot, BlockWriter* writer);
  void SubmitBlock();
  void AddInGeneral(uint64_t timestamp, uint64_t lost_before, std::span<const uint8_t> data);
  void EndPage();
  // The block space for the next page, then the bookkeeping once it is written.
  uint8_t* NextPageSlot();
  void PageWritten();

  base::ScopedFd owned_;
  int fd_;
  uint64_t offset_;
  uint64_t capacity_;
  size_t slot_;
  BlockWriter* writer_;
  PageEncoder page_;
  uint8_t* block_ = nullptr;  // pages not yet submitted
  size_t block_used_ = 0;
  uint64_t size_ = 0;         // bytes of finished pages, submitted or in block_
  uint64_t pending_lost_ = 0;
  bool fits_ = true;
};

}  // namespace udiag::record::tracedat
