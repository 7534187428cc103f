// Packet assembly. A packet's content is only known once it is closed, so
// it is built in memory (bounded by kPacketTargetSize plus one event) and
// its context is filled in just before the write.

#include "record/ctf/stream_file_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace udiag::record::ctf {
namespace {

// Packets are cut once their content would pass this size; an event larger
// than it gets a packet of its own.
constexpr size_t kPacketTargetSize = 64 * 1024;

template <typename T>
void Store(std::vector<uint8_t>* packet, size_t at, T value) {
  std::memcpy(packet->data() + at, &value, sizeof(value));
}

int WriteAll(int fd, std::span<const uint8_t> bytes) {
  while (!bytes.empty()) {
    ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return written < 0 ? errno : EIO;
    bytes = bytes.subspan(written);
  }
  return 0;
}

}  // namespace

StreamFileWriter::StreamFileWriter(base::ScopedFd fd, uint32_t cpu,
                                   const std::array<uint8_t, kUuidSize>& uuid)
    : fd_(std::move(fd)), cpu_(cpu), uuid_(uuid) {}

void StreamFileWriter::StartPacket(uint64_t timestamp) {
  packet_.assign(kPacketPreambleSize, 0);
  packet_open_ = true;
  begin_ = end_ = timestamp;
  event_count_ = 0;
}

void StreamFileWriter::FlushPacket() {
  uint64_t bits = uint64_t{packet_.size()} * 8;
  Store(&packet_, kMagicAt, kPacketMagic);
  std::memcpy(packet_.data() + kUuidAt, uuid_.data(), uuid_.size());
  Store(&packet_, kStreamIdAt, uint32_t{0});
  Store(&packet_, kTimestampBeginAt, begin_);
  Store(&packet_, kTimestampEndAt, end_);
  Store(&packet_, kContentSizeAt, bits);
  Store(&packet_, kPacketSizeAt, bits);
  Store(&packet_, kPacketSeqNumAt, packets_written_);
  Store(&packet_, kEventsDiscardedAt, discarded_);
  Store(&packet_, kCpuIdAt, cpu_);
  if (error_ == 0) error_ = WriteAll(fd_.get(), packet_);
  ++packets_written_;
  packet_open_ = false;
}

void StreamFileWriter::WriteBaselinePacket(uint64_t timestamp) {
  if (packets_written_ > 0 || packet_open_) return;
  StartPacket(timestamp);
  FlushPacket();
}

void StreamFileWriter::Append(uint64_t timestamp, uint64_t lost_before, std::span<const uint8_t> event) {
  if (lost_before > 0) WriteBaselinePacket(timestamp);
  bool full = packet_open_ && event_count_ > 0 && packet_.size() + event.size() > kPacketTargetSize;
  if (packet_open_ && (full || lost_before > 0)) FlushPacket();
  if (!packet_open_) StartPacket(timestamp);
  discarded_ += lost_before;
  packet_.insert(packet_.end(), event.begin(), event.end());
  end_ = timestamp;
  ++event_count_;
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
  return error_;
}

int StreamFileWriter::Close(uint64_t timestamp) {
  if (packet_open_) {
    FlushPacket();
  } else if (packets_written_ == 0) {
    StartPacket(timestamp);
    FlushPacket();
  }
  if (error_ == 0 && ::close(fd_.Release()) != 0) error_ = errno;
  return error_;
}

}  // namespace udiag::record::ctf
