// This process's view of its data files: for each descriptor, what every
// write_index stands for. The write path reads it without locks; it only
// grows while the descriptor is open, and slots never change once published.
#pragma once

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
  explicit DataFileMirror(uint32_t epoch) : epoch_(epoch) {}
  ~DataFileMirror();

  // The daemon connection this file belongs to; a file from a daemon that
  // has gone away is dead.
  uint32_t epoch() const { return epoch_; }

  const EventSlot* Find(uint32_t index) const {
    if (index >= kChunks * kChunkSlots) return nullptr;
    auto* chunk = chunks_[index / kChunkSlots].load(std::memory_order_acquire);
    return chunk ? chunk[index % kChunkSlots].load(std::memory_order_acquire) : nullptr;
  }
  // Publishes a slot; callers serialise through DataFileTable's mutex.
  void Set(uint32_t index, const EventSlot& slot);

 private:
  static constexpr uint32_t kChunkSlots = 256;
  static constexpr uint32_t kChunks = 256;
  const uint32_t epoch_;
  std::atomic<std::atomic<const EventSlot*>*> chunks_[kChunks] = {};
  std::vector<std::unique_ptr<EventSlot>> owned_;
};

class DataFileTable {
 public:
  DataFileMirror* Find(int fd) const {
    if (fd >= 0 && fd < kDirect) return direct_[fd].load(std::memory_order_acquire);
    return FindSlow(fd);
  }
  DataFileMirror* FindOrAdd(int fd, uint32_t epoch);
  void Remove(int fd);
  // Descriptors currently known (used after fork to claim them).
  std::vector<int> Descriptors() const;

  std::mutex& mutex() { return mu_; }

 private:
  static constexpr int kDirect = 4096;
  DataFileMirror* FindSlow(int fd) const;

  mutable std::mutex mu_;
  std::atomic<DataFileMirror*> direct_[kDirect] = {};
  std::unordered_map<int, DataFileMirror*> far_;  // fds >= kDirect
};

// The process's table. Created when the library loads (before any program
// code can write), never destroyed: writers may run during exit.
extern DataFileTable* const g_data_files;
inline DataFileTable& DataFiles() { return *g_data_files; }

}  // namespace udiag::producer
