// One CTF data stream file (one per CPU): cuts events into packets, fills
// each packet's header and context, and writes it when it is complete.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "base/scoped_fd.h"
#include "record/ctf/ctf_layout.h"

namespace udiag::record::ctf {

class StreamFileWriter {
 public:
  StreamFileWriter(base::ScopedFd fd, uint32_t cpu, const std::array<uint8_t, kUuidSize>& uuid);

  // Appends one event (header onwards). Events come in non-decreasing
  // timestamp order. `lost_before` events were discarded just before it: it
  // starts a new packet whose events_discarded has grown by that much.
  void Append(uint64_t timestamp, uint64_t lost_before, std::span<const uint8_t> event);

  // Ends the stream with an empty packet at `timestamp` that counts `lost`
  // more discarded events (losses after the last record).
  void AddTrailingLoss(uint64_t timestamp, uint64_t lost);

  // Writes the open packet, if any, so everything appended is on disk in
  // whole packets. Returns 0 or the first errno a write failed with.
  int Flush();

  // Writes the open packet, or one empty packet at `timestamp` if the stream
  // has none, so every stream file is a valid stream. Returns 0 or the first
  // errno a write failed with.
  int Close(uint64_t timestamp);

 private:
  void StartPacket(uint64_t timestamp);
  // babeltrace2 reports no count for losses in a stream's first packet
  // ("may have discarded"), so a loss there first gets an empty packet
  // with none.
  void WriteBaselinePacket(uint64_t timestamp);
  void FlushPacket();

  base::ScopedFd fd_;
  uint32_t cpu_;
  std::array<uint8_t, kUuidSize> uuid_;
  std::vector<uint8_t> packet_;  // header + context, then events
  bool packet_open_ = false;
  uint64_t begin_ = 0, end_ = 0;
  uint64_t event_count_ = 0;  // in the open packet
  uint64_t packets_written_ = 0;
  uint64_t discarded_ = 0;    // running total
  int error_ = 0;
};

}  // namespace udiag::record::ctf
