// The shared-memory half of a record stream (record_stream_format.h): a byte
// ring in a sealed memfd that the daemon writes frames into and the recorder
// reads them from in place. Records cross with one copy, into the ring, and
// no system call per batch: a socket carried them before, and its two copies
// in the kernel were a third of the daemon's time and most of the
// recorder's. The data area is mapped twice, back to back, so any run of
// bytes starting anywhere is contiguous: frames are never reassembled.
//
// The socket beside the ring carries only wake-ups, a byte each: the writer
// pokes a reader that said it sleeps, the reader pokes a writer that said it
// waits for room. Each side sets its flag, then re-checks the ring, and the
// other side fences between publishing and reading the flag, so a wake-up is
// never missed. A reader that wakes on its own timer as well may say it
// dozes: it is poked only once an eighth of the ring is readable, so a
// steady trickle of frames does not cost both sides a wake-up per batch.
//
// The daemon does not trust the reader: it never relies on the data it
// wrote staying as written, the memfd is sealed against resizing, and a tail
// that moves backwards or past the head breaks the stream, not the daemon.
//
// After the ring, the memfd may hold a pool of pages (pool_pages()): the
// writer fills one, then sends a frame that names it rather than carrying
// it (a page checked where it lies is not copied again). Which pages are
// free is the writer's business: a page named by a frame is free again
// once the reader's tail has passed that frame.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

#include "base/error_or.h"
#include "base/scoped_fd.h"

namespace udiag::ipc {

inline constexpr uint32_t kStreamRingMagic = 0x53524455;  // "UDRS"
inline constexpr uint32_t kStreamRingVersion = 3;  // 2: the page pool; 3: page sizes and losses in the frame
// reader_sleeping: 0 while the reader reads; else how soon it wants a poke
// (a writer that knows only kReaderSleeps pokes a dozing reader at once).
inline constexpr uint32_t kReaderSleeps = 1;  // at the first byte
inline constexpr uint32_t kReaderDozes = 2;   // once data_size / 8 bytes are readable

struct StreamRingHeader {
  uint32_t magic;
  uint32_t version;
  uint64_t data_size;
  uint64_t pool_pages;  // of kPoolPageSize bytes, after the data
  alignas(64) std::atomic<uint64_t> head;  // bytes written, by the writer
  alignas(64) std::atomic<uint64_t> tail;  // bytes read, by the reader
  std::atomic<uint32_t> reader_sleeping;   // the reader waits for data (kReaderSleeps or kReaderDozes)
  std::atomic<uint32_t> writer_waiting;    // the writer waits for room
};

class StreamRing {
 public:
  // 8 MiB: the socket's 4 MiB queue plus the reader's 4 MiB buffer it replaces.
  static constexpr uint64_t kDefaultDataBytes = 8 << 20;
  // Room for the largest frame twice over, so a frame always fits whole.
  static constexpr uint64_t kMinDataBytes = 1 << 20;

  static constexpr uint64_t kPoolPageSize = 4096;
  static constexpr uint64_t kMaxPoolPages = 1 << 16;

  // The writer's side: a new ring of `data_size` bytes (a power of two, at
  // least kMinDataBytes) and a pool of `pool_pages` pages (at most
  // kMaxPoolPages) in a sealed memfd.
  static base::ErrorOr<std::unique_ptr<StreamRing>> Create(uint64_t data_size = kDefaultDataBytes,
                                                           uint64_t pool_pages = 0);
  // The reader's side: maps a ring the writer made. EPROTO when `fd` is not one.
  static base::ErrorOr<std::unique_ptr<StreamRing>> Map(base::ScopedFd fd);
  ~StreamRing();
  StreamRing(const StreamRing&) = delete;
  StreamRing& operator=(const StreamRing&) = delete;

  int fd() const { return fd_.get(); }
  uint64_t data_size() const { return size_; }
  uint64_t pool_pages() const { return pool_pages_; }
  // Page `slot` of the pool (slot < pool_pages()); the reader's is read-only.
  uint8_t* pool_page(uint64_t slot) const { return pool_ + slot * kPoolPageSize; }

  // Writer. Room to write now, contiguous at write_position(); 0 once the
  // reader broke the protocol (broken()).
  uint64_t Writable();
  uint8_t* write_position() { return data_ + (head_ & (size_ - 1)); }
  // Makes n written bytes readable. True when the reader sleeps, or dozes
  // and an eighth of the ring is readable: poke it.
  bool Publish(uint64_t n);
  // Says the writer waits for room, then returns the room there is now.
  uint64_t WaitForRoom();
  // Stream positions: what the writer published, and the reader's tail as
  // Writable() last read it.
  uint64_t written() const { return head_; }
  uint64_t read_by_reader() const { return tail_; }
  bool broken() const { return broken_; }

  // Reader. What is readable now, contiguous.
  std::span<const uint8_t> Readable();
  // Frees n read bytes. True when the writer waits for room: poke it.
  bool Release(uint64_t n);
  // Says the reader sleeps until at least `want` bytes are readable (or,
  // dozing, until an eighth of the ring is: for a reader that also wakes on
  // a timer), then returns whether they are already (call Awake() either
  // way after).
  bool SleepUnlessReadable(uint64_t want, bool doze = false);
  void Awake();

 private:
  StreamRing(base::ScopedFd fd, StreamRingHeader* header, uint8_t* data, uint64_t size, uint8_t* pool,
             uint64_t pool_pages);
  static base::ErrorOr<std::unique_ptr<StreamRing>> MapShared(base::ScopedFd fd, uint64_t data_size,
                                                              uint64_t pool_pages, bool writer);

  base::ScopedFd fd_;
  StreamRingHeader* header_;
  uint8_t* data_;  // mapped twice: 2 * size_ bytes of address space
  uint64_t size_;
  uint8_t* pool_;  // null without one
  uint64_t pool_pages_;
  uint64_t head_ = 0;  // the writer's, or the reader's last snapshot
  uint64_t tail_ = 0;  // the reader's, or the writer's last checked snapshot
  bool broken_ = false;
};

}  // namespace udiag::ipc
