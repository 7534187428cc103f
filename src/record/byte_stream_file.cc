#include "record/byte_stream_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>

#include "record/fd_io.h"

namespace udiag::record {

ByteStreamFile::ByteStreamFile(base::ScopedFd fd) : fd_(std::move(fd)) {
  struct stat st;
  regular_ = ::fstat(fd_.get(), &st) == 0 && S_ISREG(st.st_mode);
  if (regular_) BlockWriter::PreferDirectIo(fd_.get());
  blocks_.PrepareForStream();
  staged_.resize(2 * BlockWriter::kBlockBytes);
}

char* ByteStreamFile::Room(size_t bytes) {
  if (used_ + bytes > staged_.size()) staged_.resize(std::max(2 * staged_.size(), used_ + bytes));
  return staged_.data() + used_;
}

void ByteStreamFile::Grew(const char* end) {
  used_ = static_cast<size_t>(end - staged_.data());
  if (used_ >= BlockWriter::kBlockBytes) Submit(used_ - used_ % BlockWriter::kBlockBytes);
}

void ByteStreamFile::Append(std::string_view bytes) {
  char* at = Room(bytes.size());
  std::memcpy(at, bytes.data(), bytes.size());
  Grew(at + bytes.size());
}

void ByteStreamFile::Submit(size_t bytes) {
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(BlockWriter::kBlockBytes, bytes - done);
    uint8_t* block = blocks_.Acquire();
    std::memcpy(block, staged_.data() + done, n);
    blocks_.Submit(block, fd_.get(), regular_ ? offset_ : BlockWriter::kAtPosition, n);
    offset_ += n;
    done += n;
  }
  std::memmove(staged_.data(), staged_.data() + bytes, used_ - bytes);
  used_ -= bytes;
}

int ByteStreamFile::Sync() {
  Submit(regular_ ? used_ - used_ % BlockWriter::kAlignment : used_);
  if (int error = blocks_.Wait(); error != 0 && error_ == 0) error_ = error;
  if (used_ == 0 || error_ != 0) return error_;
  // The part-filled last block, through the page cache: direct I/O writes
  // whole blocks only. No write of blocks_ is under way.
  const int flags = ::fcntl(fd_.get(), F_GETFL);
  if (flags >= 0 && (flags & O_DIRECT) != 0) ::fcntl(fd_.get(), F_SETFL, flags & ~O_DIRECT);
  error_ = WriteAllAt(fd_.get(), {reinterpret_cast<const uint8_t*>(staged_.data()), used_}, offset_);
  if (flags >= 0 && (flags & O_DIRECT) != 0) ::fcntl(fd_.get(), F_SETFL, flags);
  return error_;
}

int ByteStreamFile::Close() {
  Sync();
  if (fd_.valid() && ::close(fd_.Release()) != 0 && error_ == 0) error_ = errno;
  return error_;
}

}  // namespace udiag::record
