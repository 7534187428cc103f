// Reads back one stream file our writer produced: packet by packet, event
// by event, checking every length against the file, and rebuilds each
// event's record in the kernel layout.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/error_or.h"
#include "base/scoped_fd.h"
#include "record/ctf/model_comment.h"

namespace udiag::record::ctf {

class StreamFileReader {
 public:
  enum class Status { kRecord, kEnd, kMalformed };

  // `model` and `types` (type id -> index in model.types) must outlive the reader.
  static base::ErrorOr<StreamFileReader> Open(const std::string& path, const TraceModel& model,
                                              const std::unordered_map<uint32_t, size_t>& types);

  // The next record into `out`; its data stays valid until the next call.
  Status Next(Record* out);

  // At kEnd: events discarded after the stream's last record.
  uint64_t trailing_loss() const { return pending_loss_; }

 private:
  StreamFileReader(base::ScopedFd fd, uint64_t file_size, const TraceModel& model,
                   const std::unordered_map<uint32_t, size_t>& types)
      : fd_(std::move(fd)), file_size_(file_size), model_(&model), types_(&types) {}

  // Reads the packet at file_offset_ into packet_; false if it is malformed.
  bool LoadPacket();
  bool DecodeEvent(Record* out);

  base::ScopedFd fd_;
  uint64_t file_size_;
  const TraceModel* model_;
  const std::unordered_map<uint32_t, size_t>* types_;
  uint64_t file_offset_ = 0;       // of the next packet
  std::vector<uint8_t> packet_;    // content of the current packet
  size_t event_at_ = 0;            // next event in packet_
  uint64_t packet_count_ = 0;
  uint32_t cpu_ = 0;
  uint64_t packet_begin_ = 0, packet_end_ = 0;
  uint64_t last_timestamp_ = 0;
  uint64_t discarded_ = 0;     // running total of the last packet
  uint64_t pending_loss_ = 0;  // not yet given to a record
  std::vector<uint8_t> record_;
};

}  // namespace udiag::record::ctf
