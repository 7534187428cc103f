// Packet assembly. A packet's content is only known once it is closed, so
// it is built in memory (bounded by kPacketTargetSize plus one event) and
// its context is filled in just before the write.

#include "record/ctf/stream_file_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace udiag::record::ctf {
namespace {

// Packets are cut once their content would pass this size; an event larger
// than it gets a packet of its own.
constexpr size_t kPacketTargetSize = 1024 * 1024;

size_t RoundUp(size_t bytes) {
  return (bytes + StreamFileWriter::kBlockBytes - 1) & ~(StreamFileWriter::kBlockBytes - 1);
}

}  // namespace

StreamFileWriter::StreamFileWriter(base::ScopedFd fd, uint32_t cpu,
                                   const std::array<uint8_t, kUuidSize>& uuid, BlockWriter* blocks)
    : fd_(std::move(fd)), blocks_(blocks), cpu_(cpu), uuid_(uuid) {}

void StreamFileWriter::Grow(size_t bytes) {
  packet_.resize(std::max(RoundUp(used_ + bytes), RoundUp(kPacketTargetSize + kBlockBytes)));
}

void StreamFileWriter::StartPacket(uint64_t timestamp) {
  used_ = 0;
  Reserve(kPacketPreambleSize);
  std::memset(packet_.data(), 0, kPacketPreambleSize);
  used_ = kPacketPreambleSize;
  packet_open_ = true;
  begin_ = end_ = timestamp;
  event_count_ = 0;
}

void StreamFileWriter::FlushPacket() {
  const size_t padded = RoundUp(used_);
  std::memset(packet_.data() + used_, 0, padded - used_);
  auto store = [&](size_t at, auto value) { std::memcpy(packet_.data() + at, &value, sizeof(value)); };
  store(kMagicAt, kPacketMagic);
  std::memcpy(packet_.data() + kUuidAt, uuid_.data(), uuid_.size());
  store(kStreamIdAt, uint32_t{0});
  store(kTimestampBeginAt, begin_);
  store(kTimestampEndAt, end_);
  store(kContentSizeAt, uint64_t{used_} * 8);
  store(kPacketSizeAt, uint64_t{padded} * 8);
  store(kPacketSeqNumAt, packets_written_);
  store(kEventsDiscardedAt, discarded_);
  store(kCpuIdAt, cpu_);
  WritePacket(padded);
  ++packets_written_;
  packet_open_ = false;
}

// Copied into the writer's blocks (aligned for direct I/O, reused once
// written), so that this packet's buffer fills again at once: a copy costs
// far less than waiting for the disk.
void StreamFileWriter::WritePacket(size_t bytes) {
  for (size_t done = 0; done < bytes;) {
    const size_t part = std::min(bytes - done, BlockWriter::kBlockBytes);
    uint8_t* const block = blocks_->Acquire();
    std::memcpy(block, packet_.data() + done, part);
    blocks_->Submit(block, fd_.get(), BlockWriter::kAtPosition, part);
    done += part;
  }
}

void StreamFileWriter::WriteBaselinePacket(uint64_t timestamp) {
  if (packets_written_ > 0 || packet_open_) return;
  StartPacket(timestamp);
  FlushPacket();
}

uint8_t* StreamFileWriter::BeginEvent(uint64_t timestamp, uint64_t lost_before, size_t max_bytes) {
  if (lost_before > 0) WriteBaselinePacket(timestamp);
  const bool full = packet_open_ && event_count_ > 0 && used_ + max_bytes > kPacketTargetSize;
  if (packet_open_ && (full || lost_before > 0)) FlushPacket();
  if (!packet_open_) StartPacket(timestamp);
  discarded_ += lost_before;
  Reserve(max_bytes);
  return packet_.data() + used_;
}

void StreamFileWriter::AddTrailingLoss(uint64_t timestamp, uint64_t lost) {
  WriteBaselinePacket(timestamp);
  if (packet_open_) FlushPacket();
  StartPacket(timestamp);
  discarded_ += lost;
  FlushPacket();
}

int StreamFileWriter::Flush() {
  if (packet_open_) FlushPacket();
  return blocks_->error();
}

int StreamFileWriter::Close(uint64_t timestamp) {
  if (packet_open_) {
    FlushPacket();
  } else if (packets_written_ == 0) {
    StartPacket(timestamp);
    FlushPacket();
  }
  int error = blocks_->Wait();
  if (::close(fd_.Release()) != 0 && error == 0) error = errno;
  return error;
}

}  // namespace udiag::record::ctf
