// The one-page status map of the 5.18-6.3 user_events ABI and of the udiag
// RFC, rebuilt inside each process. The agent thread keeps its bits like any
// other enabler's; the program maps the page read-only through the status
// file or /dev/udiag (the preload's mmap).
//
// One status number n serves both historic readings of the page: the byte
// model (5.18, RFC) tests page[n] != 0, the bit model (6.0-6.3) tests
// page[n >> 3] & (1 << (n & 7)). Numbers are n = 8k with k in [64, 512), so
// the bit model's byte k (64..511) and the byte model's byte 8k (512..4088)
// never overlap: 448 events per process.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "base/error_or.h"

namespace udiag::producer::legacy {

inline constexpr size_t kStatusPageSize = 4096;

class StatusPage {
 public:
  // The process's page, created on first use; nullptr with errno on failure.
  static StatusPage* Get();
  // The existing page or nullptr: never creates one.
  static StatusPage* IfCreated();

  // A status number for `event_id`, shared by every registration of the
  // event in this process. `*first` says whether the caller must now set up
  // the bits. EMFILE when the page is full.
  base::ErrorOr<uint32_t> Acquire(uint32_t event_id, bool* first);
  // Drops one registration; true when it was the event's last.
  bool Release(uint32_t number);

  // The two words (4-byte aligned, bit 0 of their first byte) the agent
  // keeps equal to "traced": the byte model's and the bit model's.
  uint64_t ByteModelWord(uint32_t number) const { return base_ + number; }
  uint64_t BitModelWord(uint32_t number) const { return base_ + ((number >> 3) & ~3u); }
  static uint8_t BitModelBit(uint32_t number) { return ((number >> 3) & 3) * 8; }
  uint8_t ByteAt(uint32_t number) const { return reinterpret_cast<const volatile uint8_t*>(base_)[number]; }

  // A word whose bit is private to one registration (see legacy_abi.cc):
  // addr and bit, or EMFILE.
  int AcquireScratch(uint64_t* addr, uint8_t* bit);
  void ReleaseScratch(uint64_t addr, uint8_t bit);

  // Maps the page read-only for the program at `addr` (a hint unless flags
  // has MAP_FIXED). MAP_FAILED with errno on failure.
  void* MapReadOnly(void* addr, int flags);
  // The program unmapped [addr, addr+len): forget views inside it.
  void ForgetViews(uint64_t addr, size_t len);

  // fork: the lock is held across it; in the child the parent's page (shared
  // memory) is replaced by a private copy at the same addresses before
  // anything writes it.
  void ForkPrepare() { mu_.lock(); }
  void ForkParent() { mu_.unlock(); }
  void ForkChild();

 private:
  StatusPage(int fd, uint64_t base, uint64_t scratch) : fd_(fd), base_(base), scratch_(scratch) {}

  std::mutex mu_;
  int fd_;
  uint64_t base_;     // read-write view the agent writes
  uint64_t scratch_;  // private page of registration bits
  std::map<uint32_t, std::pair<uint32_t, int>> slots_;  // number -> (event id, registrations)
  std::vector<uint64_t> read_only_views_;
  std::vector<bool> scratch_used_ = std::vector<bool>(kStatusPageSize * 8);
};

}  // namespace udiag::producer::legacy
