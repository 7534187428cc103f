// This process's view of its data files: for each descriptor, what every
// write_index stands for. The write path reads it without locks; it only
// grows while the descriptor is open, and slots never change once published.
// After a daemon restart each file gets a new mirror (reconnect.cc): the
// program's write indices stay, the event ids behind them are the new
// daemon's. A replaced mirror is retired, never freed: writers may hold it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "schema/loc_check.h"

namespace udiag::producer {

// What a write needs to know about one event on one data file.
struct EventSlot {
  uint32_t id = 0;
  uint32_t min_size = 0;
  std::vector<schema::LocCheck> locs;
};

class DataFileMirror {
 public:
  // `remapped`: built after a daemon restart, where the program's write
  // indices are this process's own (see LocalIndexFor).
  explicit DataFileMirror(uint32_t epoch, bool remapped = false) : epoch_(epoch), remapped_(remapped) {}
  ~DataFileMirror();

  // The daemon connection this file belongs to; a file from a daemon that
  // has gone away is dead.
  uint32_t epoch() const { return epoch_; }
  // Whether an index missing here may be asked of the daemon: not after a
  // restart, when the daemon's indices of the new file differ from ours.
  bool daemon_knows_indices() const { return !remapped_; }

  const EventSlot* Find(uint32_t index) const {
    if (index >= kChunks * kChunkSlots) return nullptr;
    auto* chunk = chunks_[index / kChunkSlots].load(std::memory_order_acquire);
    return chunk ? chunk[index % kChunkSlots].load(std::memory_order_acquire) : nullptr;
  }
  // Publishes a slot; callers serialise through DataFileTable's mutex.
  void Set(uint32_t index, const EventSlot& slot);
  // The write index the program gets for event `slot.id`, which the daemon
  // registered at `daemon_index`: the same number, except on a remapped
  // file, where it is the index this process already gave the event or the
  // next unused one. Publishes the slot. Under DataFileTable's mutex.
  uint32_t LocalIndexFor(uint32_t daemon_index, const EventSlot& slot);
  // One past the highest index given out: a remapped file hands out new
  // indices after those of the file it replaces, which the program may hold.
  uint32_t end_index() const { return end_index_; }
  void ContinueAfter(const DataFileMirror& old) { end_index_ = std::max(end_index_, old.end_index_); }

 private:
  static constexpr uint32_t kChunkSlots = 256;
  static constexpr uint32_t kChunks = 256;
  const uint32_t epoch_;
  const bool remapped_;
  uint32_t end_index_ = 0;
  std::unordered_map<uint32_t, uint32_t> index_of_id_;  // remapped files only
  std::atomic<std::atomic<const EventSlot*>*> chunks_[kChunks] = {};
  std::vector<std::unique_ptr<EventSlot>> owned_;
};

class DataFileTable {
 public:
  // Changes whenever a descriptor's mirror is put in or taken out: a write
  // path that remembered what (fd, index) meant knows it still does while
  // this has not moved (removed mirrors are freed, so their addresses alone
  // could be reused by the next file).
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  DataFileMirror* Find(int fd) const {
    if (fd >= 0 && fd < kDirect) return direct_[fd].load(std::memory_order_acquire);
    return FindSlow(fd);
  }
  DataFileMirror* FindOrAdd(int fd, uint32_t epoch);
  DataFileMirror* Get(int fd) const;  // under mutex()
  // Puts `mirror` in place of fd's (if fd is still in the table; else it is
  // deleted). Under mutex().
  void Replace(int fd, DataFileMirror* mirror);
  void Remove(int fd);
  // Descriptors currently known (used after fork to claim them).
  std::vector<int> Descriptors() const;

  std::mutex& mutex() { return mu_; }

 private:
  static constexpr int kDirect = 4096;
  DataFileMirror* FindSlow(int fd) const;

  void Put(int fd, DataFileMirror* mirror);  // under mu_; retires the old one

  mutable std::mutex mu_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<DataFileMirror*> direct_[kDirect] = {};
  std::unordered_map<int, DataFileMirror*> far_;  // fds >= kDirect
  std::vector<std::unique_ptr<DataFileMirror>> retired_;
};

// The process's table. Created when the library loads (before any program
// code can write), never destroyed: writers may run during exit.
extern DataFileTable* const g_data_files;
inline DataFileTable& DataFiles() { return *g_data_files; }

}  // namespace udiag::producer
