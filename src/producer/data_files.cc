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
  end_index_ = std::max(end_index_, index + 1);
  if (remapped_) index_of_id_.emplace(slot.id, index);
}

uint32_t DataFileMirror::LocalIndexFor(uint32_t daemon_index, const EventSlot& slot) {
  uint32_t index = daemon_index;
  if (remapped_) {
    auto known = index_of_id_.find(slot.id);
    index = known != index_of_id_.end() ? known->second : end_index_;
  }
  Set(index, slot);
  return index;
}

DataFileMirror* DataFileTable::FindSlow(int fd) const {
  std::lock_guard lock(mu_);
  auto it = far_.find(fd);
  return it == far_.end() ? nullptr : it->second;
}

DataFileMirror* DataFileTable::Get(int fd) const {
  if (fd < kDirect) return direct_[fd].load();
  auto it = far_.find(fd);
  return it == far_.end() ? nullptr : it->second;
}

void DataFileTable::Put(int fd, DataFileMirror* mirror) {
  DataFileMirror* old = Get(fd);
  if (fd < kDirect) {
    direct_[fd].store(mirror, std::memory_order_release);
  } else {
    far_[fd] = mirror;
  }
  if (old) retired_.emplace_back(old);
  generation_.fetch_add(1, std::memory_order_release);
}

DataFileMirror* DataFileTable::FindOrAdd(int fd, uint32_t epoch) {
  // Caller holds mu_.
  DataFileMirror* existing = Get(fd);
  if (existing && existing->epoch() == epoch) return existing;
  auto* mirror = new DataFileMirror(epoch);
  Put(fd, mirror);
  return mirror;
}

void DataFileTable::Replace(int fd, DataFileMirror* mirror) {
  if (Get(fd)) {
    Put(fd, mirror);
  } else {
    delete mirror;  // closed meanwhile
  }
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
  generation_.fetch_add(1, std::memory_order_release);
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
