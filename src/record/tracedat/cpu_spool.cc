#include "record/tracedat/cpu_spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "record/fd_io.h"
#include "record/tracedat/tracedat_layout.h"
#include "schema/event_description.h"

namespace udiag::record::tracedat {
namespace {

static_assert(BlockWriter::kBlockBytes % kPageSize == 0);

int CreateUnlinkedFile(const std::string& directory) {
  int fd = ::open(directory.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR)) return fd;
  // Filesystems without O_TMPFILE: a named file, unlinked right away.
  std::string name = directory + "/.udiag-tracedat-XXXXXX";
  fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd >= 0) ::unlink(name.c_str());
  return fd;
}

}  // namespace

base::ErrorOr<std::unique_ptr<CpuSpool>> CpuSpool::CreateTemporary(const std::string& directory,
                                                                   BlockWriter* writer) {
  int fd = CreateUnlinkedFile(directory);
  if (fd < 0) return base::Errno{errno};
  BlockWriter::PreferDirectIo(fd);
  return std::unique_ptr<CpuSpool>(
      new CpuSpool(base::ScopedFd(fd), fd, 0, UINT64_MAX, BlockProgress::kNone, writer));
}

std::unique_ptr<CpuSpool> CpuSpool::InRegion(int fd, uint64_t offset, uint64_t capacity, size_t slot,
                                             BlockWriter* writer) {
  return std::unique_ptr<CpuSpool>(new CpuSpool(base::ScopedFd(), fd, offset, capacity, slot, writer));
}

CpuSpool::CpuSpool(base::ScopedFd owned, int fd, uint64_t offset, uint64_t capacity, size_t slot,
                   BlockWriter* writer)
    : owned_(std::move(owned)), fd_(fd), offset_(offset), capacity_(capacity), slot_(slot), writer_(writer) {
  writer_->PrepareForStream();
}

CpuSpool::~CpuSpool() {
  if (block_) writer_->Release(block_);
}

void CpuSpool::AddInGeneral(uint64_t timestamp, uint64_t lost_before, std::span<const uint8_t> data) {
  uint64_t lost = pending_lost_ + lost_before;
  if (data.size() < schema::kCommonHeaderSize || data.size() > PageEncoder::MaxDataSize()) {
    pending_lost_ = lost + 1;
    return;
  }
  pending_lost_ = 0;
  if (lost > 0) {
    // The kernel reports losses per page: the record opens a page that says so.
    if (!page_.empty()) EndPage();
    page_.MarkLostBefore(lost);
  }
  if (page_.Append(timestamp, data)) return;
  EndPage();
  page_.Append(timestamp, data);  // fits: an empty page takes MaxDataSize
}

void CpuSpool::EndPage() {
  page_.FinishInto(NextPageSlot());
  PageWritten();
}

void CpuSpool::AddPage(std::span<const uint8_t> page) {
  if (!page_.empty()) EndPage();
  std::memcpy(NextPageSlot(), page.data(), kPageSize);
  PageWritten();
}

uint8_t* CpuSpool::NextPageSlot() {
  if (!block_) block_ = writer_->Acquire();
  return block_ + block_used_;
}

void CpuSpool::PageWritten() {
  if (size_ + kPageSize > capacity_) fits_ = false;
  if (!fits_) return;  // the page stays unwritten in its slot
  block_used_ += kPageSize;
  size_ += kPageSize;
  if (block_used_ == BlockWriter::kBlockBytes) SubmitBlock();
}

void CpuSpool::SubmitBlock() {
  writer_->Submit(std::exchange(block_, nullptr), fd_, offset_ + size_ - block_used_, block_used_, {slot_, size_});
  block_used_ = 0;
}

void CpuSpool::Flush() {
  if (!page_.empty()) EndPage();
  if (block_used_ > 0) SubmitBlock();
}

int CpuSpool::CopyTo(int out_fd, uint64_t offset) const {
  for (uint64_t done = 0; done < size_;) {
    uint8_t* block = writer_->Acquire();
    size_t want = static_cast<size_t>(std::min<uint64_t>(BlockWriter::kBlockBytes, size_ - done));
    if (int error = ReadAllAt(fd_, std::span(block, want), offset_ + done)) {
      writer_->Release(block);
      return error;
    }
    writer_->Submit(block, out_fd, offset == BlockWriter::kAtPosition ? offset : offset + done, want);
    done += want;
  }
  return 0;
}

}  // namespace udiag::record::tracedat
