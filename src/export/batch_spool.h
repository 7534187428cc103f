// A bounded local directory of batches ClickHouse has not taken yet, sent
// oldest first when it is back. A batch is one file, written to a temporary
// name and renamed, so a crash leaves whole batches only; it survives the
// exporter and the next run sends it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace udiag::exporter {

struct Batch {
  uint64_t id = 0;
  std::string table;      // the event's table name, before versioning
  std::string signature;  // its columns (ColumnSignature): which version it goes to
  std::string rows;
  uint64_t row_count = 0;
};

class BatchSpool {
 public:
  // Creates `dir` if needed; takes up to max_bytes of it.
  BatchSpool(std::string dir, uint64_t max_bytes);

  // 0, ENOSPC when the batch does not fit under the bound, or an errno.
  int Put(const Batch& batch);
  // The oldest spooled batch's path, or nullopt.
  std::optional<std::string> Oldest() const;
  // Reads a spooled batch; nullopt for a damaged file.
  static std::optional<Batch> Load(const std::string& path);
  void Remove(const std::string& path);
  size_t count() const;
  uint64_t bytes() const;

 private:
  std::vector<std::string> Files() const;  // sorted, oldest first
  std::string dir_;
  uint64_t max_bytes_;
  uint64_t next_ = 0;
};

}  // namespace udiag::exporter
