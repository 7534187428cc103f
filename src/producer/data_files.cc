#include "producer/data_files.h"

namespace udiag::producer {

DataFileMirror::~DataFileMirror() {
  for (auto& chunk : chunks_) delete[] chunk.load();
}

void DataFileMirror::Set(uint32_t index, const EventSlot& slot) {
  if (index >= kChunks * kChunkSlots || Find(index)) return;
  auto& chunk_ref = chunks_[index / kChunkSlots];
  auto* chunk = chunk_ref.load(std::memory_order_relaxed);
  if (!chunk) {
    chunk = new std::atomic<const EventSlot*>[kChunkSlots]();
    chunk_ref.store(chunk, std::memory_order_release);
  }
  owned_.push_back(std::make_unique<EventSlot>(slot));
  chunk[index % kChunkSlots].store(owned_.back().get(), std::memory_order_release);
}

DataFileMirror* DataFileTable::FindSlow(int fd) const {
  std::lock_guard lock(mu_);
  auto it = far_.find(fd);
  return it == far_.end() ? nullptr : it->second;
}

DataFileMirror* DataFileTable::FindOrAdd(int fd, uint32_t epoch) {
  // Caller holds mu_.
  DataFileMirror* existing = fd < kDirect ? direct_[fd].load() : (far_.contains(fd) ? far_[fd] : nullptr);
  if (existing && existing->epoch() == epoch) return existing;
  auto* mirror = new DataFileMirror(epoch);
  if (fd < kDirect) {
    direct_[fd].store(mirror, std::memory_order_release);
  } else {
    far_[fd] = mirror;
  }
  delete existing;
  return mirror;
}

void DataFileTable::Remove(int fd) {
  std::lock_guard lock(mu_);
  DataFileMirror* old = nullptr;
  if (fd >= 0 && fd < kDirect) {
    old = direct_[fd].exchange(nullptr);
  } else if (auto it = far_.find(fd); it != far_.end()) {
    old = it->second;
    far_.erase(it);
  }
  delete old;
}

std::vector<int> DataFileTable::Descriptors() const {
  std::vector<int> fds;
  for (int fd = 0; fd < kDirect; ++fd) {
    if (direct_[fd].load()) fds.push_back(fd);
  }
  for (const auto& [fd, _] : far_) fds.push_back(fd);
  return fds;
}

DataFileTable* const g_data_files = new DataFileTable;

}  // namespace udiag::producer
