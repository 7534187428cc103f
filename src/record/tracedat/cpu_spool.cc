#include "record/tracedat/cpu_spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "record/tracedat/fd_io.h"
#include "record/tracedat/tracedat_layout.h"
#include "schema/event_description.h"

namespace udiag::record::tracedat {
namespace {

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

base::ErrorOr<std::unique_ptr<CpuSpool>> CpuSpool::Create(const std::string& directory) {
  int fd = CreateUnlinkedFile(directory);
  if (fd < 0) return base::Errno{errno};
  return std::unique_ptr<CpuSpool>(new CpuSpool(base::ScopedFd(fd)));
}

int CpuSpool::Add(uint64_t timestamp, uint64_t lost_before, std::span<const uint8_t> data) {
  uint64_t lost = pending_lost_ + lost_before;
  if (data.size() < schema::kCommonHeaderSize || data.size() > PageEncoder::MaxDataSize()) {
    pending_lost_ = lost + 1;
    return 0;
  }
  pending_lost_ = 0;
  if (lost > 0) {
    // The kernel reports losses per page: the record opens a page that says so.
    if (int error = Flush()) return error;
    page_.MarkLostBefore(lost);
  }
  if (page_.Append(timestamp, data)) return 0;
  if (int error = Flush()) return error;
  page_.Append(timestamp, data);  // fits: an empty page takes MaxDataSize
  return 0;
}

int CpuSpool::Flush() {
  if (page_.empty()) return 0;
  if (int error = WriteAll(file_.get(), page_.Finish())) return error;
  size_ += kPageSize;
  return 0;
}

int CpuSpool::CopyTo(int out_fd) const {
  std::vector<uint8_t> buffer(1 << 16);
  for (uint64_t offset = 0; offset < size_;) {
    ssize_t got = ::pread(file_.get(), buffer.data(), buffer.size(), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return errno;
    if (got == 0) return EIO;
    if (int error = WriteAll(out_fd, std::span(buffer.data(), static_cast<size_t>(got)))) return error;
    offset += static_cast<uint64_t>(got);
  }
  return 0;
}

}  // namespace udiag::record::tracedat
