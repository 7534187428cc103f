// Writes large page-aligned blocks to files on a background thread, with
// direct I/O (O_DIRECT) where the file system takes it.
//
// A recording reaches the disk at hundreds of MB/s. Through the page cache
// that costs the writing process about 1.7 ns of CPU per byte on the 2-core
// VMs we measure on, ten times what direct I/O costs (docs/performance-history.md),
// and a write made in line leaves the recorder waiting on the disk while the
// daemon's buffer fills. So the recorder only fills blocks; this thread
// writes them, in the order they were submitted.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace udiag::record {

// What a written block tells BlockWriter::Written(): `slot` has its first
// `end` bytes on disk. Slots are small numbers the caller chooses (a cpu).
struct BlockProgress {
  static constexpr size_t kNone = SIZE_MAX;
  size_t slot = kNone;
  uint64_t end = 0;
};

class BlockWriter {
 public:
  // Block size and alignment: multiples of every logical block size direct
  // I/O may ask for.
  static constexpr size_t kBlockBytes = 1 << 20;
  static constexpr size_t kAlignment = 4096;
  // Submit's offset for "at the file's current position" (pipes, devices).
  static constexpr uint64_t kAtPosition = UINT64_MAX;

  BlockWriter();
  ~BlockWriter();  // waits for the writes already submitted
  BlockWriter(const BlockWriter&) = delete;
  BlockWriter& operator=(const BlockWriter&) = delete;

  // Touches the blocks a stream of pages cycles through, once: called before
  // streaming, so that a writer used only for a few header blocks (the
  // daemon writes the pages) costs no more memory than those.
  void PrepareForStream();

  // Turns on direct I/O for `fd` when its file system allows it; otherwise
  // the file is written through the page cache as usual.
  static void PreferDirectIo(int fd);

  // A block of kBlockBytes, kAlignment-aligned, to fill. Waits while too
  // many submitted blocks are still being written.
  uint8_t* Acquire();
  // Queues the first `bytes` (a multiple of kAlignment) of `block` for
  // writing at `offset` (a multiple of kAlignment, or kAtPosition) of `fd`,
  // which must stay open until Wait returns. Blocks are written in the
  // order submitted, and return to the pool once written. After a write
  // fails no later block is written, so each slot's bytes on disk are a
  // prefix of what was submitted for it.
  void Submit(uint8_t* block, int fd, uint64_t offset, size_t bytes, BlockProgress progress = {});
  // The first error a write met so far (an errno), or 0; does not wait.
  int error();
  // The `end` of the last block of `slot` written, 0 before any.
  uint64_t Written(size_t slot);
  // Returns a block from Acquire without writing it.
  void Release(uint8_t* block);
  // Waits until every submitted block is written. Returns the first error
  // any write met since construction (an errno), or 0.
  int Wait();

 private:
  struct Job {
    uint8_t* block;
    int fd;
    uint64_t offset;
    size_t bytes;
    BlockProgress progress;
  };
  struct FreeBlock {
    void operator()(uint8_t* block) const;
  };

  void Run();
  static int WriteBlock(const Job& job);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> queue_;
  std::vector<uint8_t*> free_;
  std::vector<std::unique_ptr<uint8_t, FreeBlock>> owned_;
  bool prepared_ = false;  // PrepareForStream ran (only its caller's thread reads it)
  bool writing_ = false;
  bool stopping_ = false;
  int error_ = 0;
  std::vector<uint64_t> written_;  // by slot
  std::thread thread_;  // last: starts once the rest is ready
};

}  // namespace udiag::record
