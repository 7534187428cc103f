// One CTF data stream file (one per CPU): cuts events into packets, fills
// each packet's header and context, and hands it to a BlockWriter when it
// is complete, whose thread writes it while the next one fills (a write in
// line left the recorder waiting on the disk for a third of its time).
// Each packet is padded to whole blocks (packet_size counts the padding,
// content_size does not, as in LTTng's packets), so that a file opened with
// O_DIRECT is written with it, bypassing the page cache: on a VM whose free
// memory goes back to its host, each new page-cache page costs a fault in
// the host (buffered writes took 3.1 s of CPU per GB on the reference
// machine, O_DIRECT ones 0.3 s).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "base/scoped_fd.h"
#include "record/block_writer.h"
#include "record/ctf/ctf_layout.h"

namespace udiag::record::ctf {

class StreamFileWriter {
 public:
  // Packets are padded to multiples of this, the largest logical block
  // size O_DIRECT asks for on usual disks.
  static constexpr size_t kBlockBytes = 4096;

  // `fd` may be opened with O_DIRECT: if the file system refuses such a
  // write, the writer goes on with buffered writes. `blocks` writes the
  // packets; it must outlive this writer's last Flush or Close.
  StreamFileWriter(base::ScopedFd fd, uint32_t cpu, const std::array<uint8_t, kUuidSize>& uuid,
                   BlockWriter* blocks);

  // Room for one event (header onwards) of at most `max_bytes`, at the end
  // of the packet it goes in: the caller encodes it there and says how many
  // bytes it took with EndEvent. Events come in non-decreasing timestamp
  // order. `lost_before` events were discarded just before it: it starts a
  // new packet whose events_discarded has grown by that much.
  uint8_t* BeginEvent(uint64_t timestamp, uint64_t lost_before, size_t max_bytes);
  void EndEvent(uint64_t timestamp, size_t bytes) {
    used_ += bytes;
    end_ = timestamp;
    ++event_count_;
  }

  // Ends the stream with an empty packet at `timestamp` that counts `lost`
  // more discarded events (losses after the last record).
  void AddTrailingLoss(uint64_t timestamp, uint64_t lost);

  // Hands the open packet, if any, to be written. Returns 0 or the first
  // errno a write failed with so far (BlockWriter::Wait makes it all).
  int Flush();

  // Writes the open packet, or one empty packet at `timestamp` if the stream
  // has none, so every stream file is a valid stream, waits for the writes
  // and closes the file. Returns 0 or the first errno a write failed with.
  int Close(uint64_t timestamp);

 private:
  void StartPacket(uint64_t timestamp);
  // babeltrace2 reports no count for losses in a stream's first packet
  // ("may have discarded"), so a loss there first gets an empty packet
  // with none.
  void WriteBaselinePacket(uint64_t timestamp);
  void FlushPacket();
  // Room for `bytes` more after the packet's `used_` bytes, and for its
  // padding (the buffer is whole blocks).
  void Reserve(size_t bytes) {
    if (used_ + bytes > packet_.size()) [[unlikely]]
      Grow(bytes);
  }
  void Grow(size_t bytes);
  // Hands the packet's first `bytes` to blocks_, in blocks of its size.
  void WritePacket(size_t bytes);

  base::ScopedFd fd_;
  BlockWriter* blocks_;
  uint32_t cpu_;
  std::array<uint8_t, kUuidSize> uuid_;
  // Header + context, then events, and room for the padding.
  std::vector<uint8_t> packet_;
  size_t used_ = 0;
  bool packet_open_ = false;
  uint64_t begin_ = 0, end_ = 0;
  uint64_t event_count_ = 0;  // in the open packet
  uint64_t packets_written_ = 0;
  uint64_t discarded_ = 0;  // running total
};

}  // namespace udiag::record::ctf
