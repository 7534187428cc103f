// The daemon's writer of a trace.dat recording's pages straight into the
// recorder's own file (handed over with SCM_RIGHTS), so that the recorder
// never copies a page: it keeps the file's layout (record/tracedat/
// region_layout.h: cpu N's pages from (N + 1) * region_bytes on) and learns
// from the stream how much of each region is on disk.
//
// Pages live in the daemon's own memory, in transparent huge pages, and go
// to the file in gathered direct-I/O writes of kBlockPages from a
// thread of their own, so a slow disk never stalls the drain loop. A write
// from scattered 4 KiB pages is a request segment per page, and a virtual
// disk takes those at a third of its speed; so each cpu's pages are lent in
// address order from a slab of its own (kSlabPages of a huge page), reused
// only once all of its pages are written: a run of a cpu's pages stays one
// segment, and one cpu's pages waiting for a full write never hold up
// another's memory.
// The file is the recorder's: whatever it is, a write error or a stall only
// ends or slows that recording.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/error_or.h"
#include "base/scoped_fd.h"

namespace udiag::service {

class PageFileWriter {
 public:
  static constexpr size_t kPageBytes = 4096;
  // Pages per write (4 MiB: a write costs the virtual disk an exit to the
  // host, which 1 MiB writes made a sixth of the daemon's time), and in all
  // per recording at least (96 MiB, taken only as a disk stall needs it: a
  // fifth of a second of a 10 M events/s recording; this VM's disk stalls
  // a write for up to 300 ms after heavy use, docs/performance-history.md).
  static constexpr size_t kBlockPages = 1024;
  static constexpr size_t kMaxPages = 24576;
  // Pages a cpu cuts from its slab before it takes another (256 KiB).
  static constexpr size_t kSlabPages = 64;
  // Memory the writing thread faults in as the recording opens: a 10 M
  // events/s recording's working set of pages on two cpus.
  static constexpr size_t kWarmBytes = 16 << 20;

  struct Progress {
    uint32_t cpu;
    uint64_t bytes;  // of the cpu's region, on disk
  };

  // Errors: EBADF unless `fd` is a regular file open for writing without
  // O_APPEND; EINVAL unless region_bytes is a power of two of at least
  // 4 GiB and 1 <= cpus <= 4096 with every region below 2^63. `wake_fd`
  // (an eventfd, not owned) is written once a write ends, unless the owner
  // said it needs no wake (SetWakeAfterWrites). Pages take at
  // most `memory_bytes` (the recording's buffer size), or kMaxPages when
  // that is less, and a slab for each cpu to start on.
  static base::ErrorOr<std::unique_ptr<PageFileWriter>> Open(base::ScopedFd fd, uint64_t region_bytes,
                                                             uint32_t cpus, int wake_fd, uint64_t memory_bytes = 0);
  // Writes already started finish on their own; queued ones are dropped.
  ~PageFileWriter();
  PageFileWriter(const PageFileWriter&) = delete;
  PageFileWriter& operator=(const PageFileWriter&) = delete;

  uint32_t cpus() const { return cpus_; }

  // A free page (kPageBytes, aligned) for `cpu` (< cpus()), or null when
  // no slab is free (every one has pages lent, queued or being written);
  // the queued ones are then submitted.
  uint8_t* Lend(uint32_t cpu);
  bool Owns(const uint8_t* page) const;
  // Takes back a lent page that will not be written.
  void GiveBack(const uint8_t* page);
  // Queues a lent page as `cpu`'s next one (cpu < cpus()). False, with the
  // page given back, once the file takes no more: a write failed or the
  // region is full (error() says which).
  bool Append(uint32_t cpu, uint8_t* page);
  // Starts writing every cpu's queued pages, however few.
  void SubmitAll();
  // Pages Lend can give for certain, whichever cpus they are for, counting
  // those whose writes have ended.
  size_t free_pages();
  // Nothing queued and nothing being written.
  bool Idle();
  // A write is under way or submitted.
  bool Writing();
  // The first errno a write met (EFBIG: a region is full), or 0.
  int error();
  // The cpus whose bytes on disk grew since the last call.
  void TakeProgress(std::vector<Progress>* out);

  // Whether a write that ends signals wake_fd (at first it does). An owner
  // whose loop comes round within a few ms anyway turns it off while its
  // pages last: a wake costs that loop a turn, and its recorder another.
  // It is on again whenever Lend finds no page, or past half the pages.
  void SetWakeAfterWrites(bool wake);
  // For an owner's loop about to sleep: wakes after writes from now on, and
  // says whether a write ended since the last TakeProgress (then the loop
  // must not sleep before it reports it, or its error).
  bool WakeAfterWritesFromNow();
  // More than half the pages are lent, queued or being written.
  bool LowOnPages();

 private:
  struct Job {
    uint32_t cpu;
    uint64_t offset;
    uint64_t end;  // the cpu's bytes once written
    std::vector<uint8_t*> pages;
  };
  // What the writing thread shares with us; it outlives us while a write
  // is under way (the thread holds it).
  struct Shared {
    base::ScopedFd fd;
    int wake_fd = -1;
    // The huge pages that pages are cut from: only the owner adds and
    // reads them; the writing thread only keeps them alive.
    std::vector<std::unique_ptr<uint8_t, void (*)(void*)>> chunks;
    std::mutex mutex;
    std::condition_variable changed;
    std::deque<Job> queue;
    std::vector<uint8_t*> written_pages;  // free again, not yet taken back
    std::vector<uint64_t> on_disk;        // by cpu
    std::vector<bool> grew;               // by cpu, since TakeProgress
    bool ended_unseen = false;            // a write ended since TakeProgress
    bool writing = false;
    bool stopping = false;
    // Set under `mutex`, once; read without it, as Append checks it per page.
    std::atomic<int> error = 0;
    // Read under `mutex` once a write ends; set without it.
    std::atomic<bool> wake_after_write = true;
  };

  PageFileWriter(std::shared_ptr<Shared> shared, uint64_t region_bytes, uint32_t cpus, size_t max_pages);
  // The writing thread: faults in the `warm` chunks, then writes jobs.
  static void Run(std::shared_ptr<Shared> shared, std::vector<uint8_t*> warm);
  // What free_pages() says when `free_slabs` slabs are free or not yet taken.
  size_t PagesForCertainIn(size_t free_slabs) const;
  // Takes another huge page for slabs, or null at max_slabs_.
  uint8_t* AddChunk();
  static int WriteJob(int fd, const Job& job);
  void Submit(uint32_t cpu);
  void TakeBackWritten();
  // The slab `page` is cut from, or kNoSlab.
  size_t SlabOf(const uint8_t* page) const;
  uint8_t* SlabStart(size_t slab) const;
  // A slab nobody cuts from with no page held (a new one if need be), or kNoSlab.
  size_t FreeSlab();

  std::shared_ptr<Shared> shared_;
  const uint64_t region_bytes_;
  const uint32_t cpus_;
  static constexpr size_t kNoSlab = SIZE_MAX;
  static constexpr uint32_t kNoCpu = UINT32_MAX;
  // Per slab (kSlabPages of shared_->chunks, in order): pages cut so far,
  // of those the ones not free again, and the cpu cutting from it.
  struct Slab {
    uint32_t cut = 0;
    uint32_t held = 0;
    uint32_t cpu = kNoCpu;
  };
  std::vector<Slab> slabs_;
  // Those nobody cuts from, with no page held: the last freed on top, its
  // memory the likeliest still in cache.
  std::vector<size_t> free_slabs_;
  std::unordered_map<const uint8_t*, size_t> chunk_index_;  // a chunk's start: its index in shared_->chunks
  const size_t max_slabs_;      // the pages Open allows, and two for each cpu
  std::vector<size_t> cutting_;  // by cpu: its slab, or kNoSlab
  struct CpuQueue {
    std::vector<uint8_t*> pages;  // not submitted yet
    uint64_t submitted = 0;       // bytes of the region given to writes
  };
  std::vector<CpuQueue> queued_;
  int error_ = 0;  // as error(), once seen (or EFBIG, found here)
  std::thread thread_;
};

}  // namespace udiag::service
