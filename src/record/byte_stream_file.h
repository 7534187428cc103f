// A file written front to back as a stream of bytes (a Perfetto trace),
// through a BlockWriter: whole 4 KiB blocks go with direct I/O where the
// file system takes it, from the BlockWriter's thread, so that the writer
// neither waits on the disk nor pays for the page cache (on a VM whose
// free memory goes back to its host, buffered writes cost the recorder
// about 1 ns of CPU a byte; docs/performance-history.md, session 29).
//
// Sync makes every byte appended so far part of the file: the last,
// part-filled block is then written through the page cache too, and
// written again, whole, with direct I/O once it fills. A pipe or a device
// gets every byte once, in order, with plain writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/scoped_fd.h"
#include "record/block_writer.h"

namespace udiag::record {

class ByteStreamFile {
 public:
  // `fd` is open for writing, at its start when it is a regular file.
  explicit ByteStreamFile(base::ScopedFd fd);

  // Room for `bytes` more at the end, valid until the next call.
  char* Room(size_t bytes);
  // What was written into Room, up to `end`, is appended.
  void Grew(const char* end);
  void Append(std::string_view bytes);

  // Writes everything appended so far and waits until it is written.
  // Returns 0 or the first errno a write failed with (after which nothing
  // more is written).
  int Sync();
  // Sync, then closes the file.
  int Close();

 private:
  // Hands the whole blocks among the first `bytes` staged (all of them for
  // a pipe) to the BlockWriter, and keeps the rest staged.
  void Submit(size_t bytes);

  base::ScopedFd fd_;
  bool regular_ = false;
  BlockWriter blocks_;
  // Bytes not yet handed to blocks_; for a regular file, from offset_ on.
  std::string staged_;
  size_t used_ = 0;
  uint64_t offset_ = 0;  // a multiple of BlockWriter::kAlignment
  int error_ = 0;
};

}  // namespace udiag::record
