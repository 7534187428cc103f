// Packet and event decoding with every bound checked: a file that is not
// exactly what our writer produces gives kMalformed, never a bad read.

#include "record/ctf/stream_file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "record/ctf/byte_cursor.h"
#include "record/ctf/event_payload.h"

namespace udiag::record::ctf {
namespace {

template <typename T>
T Load(const std::vector<uint8_t>& bytes, size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof(value));
  return value;
}

bool ReadAt(int fd, uint64_t offset, size_t size, std::vector<uint8_t>* out) {
  out->resize(size);
  size_t done = 0;
  while (done < size) {
    ssize_t got = ::pread(fd, out->data() + done, size - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += got;
  }
  return true;
}

}  // namespace

base::ErrorOr<StreamFileReader> StreamFileReader::Open(const std::string& path, const TraceModel& model,
                                                       const std::unordered_map<uint32_t, size_t>& types) {
  base::ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st;
  if (!fd || ::fstat(fd.get(), &st) != 0) return base::Errno{errno};
  return StreamFileReader(std::move(fd), static_cast<uint64_t>(st.st_size), model, types);
}

bool StreamFileReader::LoadPacket() {
  if (file_size_ - file_offset_ < kPacketPreambleSize ||
      !ReadAt(fd_.get(), file_offset_, kPacketPreambleSize, &packet_)) {
    return false;
  }
  uint64_t content_bits = Load<uint64_t>(packet_, kContentSizeAt);
  uint64_t packet_bits = Load<uint64_t>(packet_, kPacketSizeAt);
  uint64_t begin = Load<uint64_t>(packet_, kTimestampBeginAt);
  uint64_t end = Load<uint64_t>(packet_, kTimestampEndAt);
  uint64_t discarded = Load<uint64_t>(packet_, kEventsDiscardedAt);
  uint32_t cpu = Load<uint32_t>(packet_, kCpuIdAt);
  bool valid = Load<uint32_t>(packet_, kMagicAt) == kPacketMagic &&
               std::memcmp(packet_.data() + kUuidAt, model_->uuid.data(), kUuidSize) == 0 &&
               Load<uint32_t>(packet_, kStreamIdAt) == 0 &&
               Load<uint64_t>(packet_, kPacketSeqNumAt) == packet_count_ && content_bits % 8 == 0 &&
               packet_bits % 8 == 0 && content_bits / 8 >= kPacketPreambleSize &&
               packet_bits >= content_bits && packet_bits / 8 <= file_size_ - file_offset_ &&
               begin <= end && begin >= last_timestamp_ && discarded >= discarded_ &&
               (packet_count_ == 0 || cpu == cpu_);
  if (!valid || !ReadAt(fd_.get(), file_offset_, content_bits / 8, &packet_)) return false;
  pending_loss_ += discarded - discarded_;
  discarded_ = discarded;
  cpu_ = cpu;
  packet_begin_ = begin;
  packet_end_ = end;
  last_timestamp_ = begin;
  event_at_ = kPacketPreambleSize;
  file_offset_ += packet_bits / 8;
  ++packet_count_;
  return true;
}

bool StreamFileReader::DecodeEvent(Record* out) {
  ByteCursor in(std::span<const uint8_t>(packet_).subspan(event_at_));
  uint32_t id, pid, tid;
  uint64_t timestamp;
  uint8_t flags, preempt_count;
  if (!in.Read(&id) || !in.Read(&timestamp) || !in.Read(&pid) || !in.Read(&tid) || !in.Read(&flags) ||
      !in.Read(&preempt_count)) {
    return false;
  }
  auto type = types_->find(id);
  if (type == types_->end() || timestamp < last_timestamp_ || timestamp > packet_end_) return false;
  // The common header: common_type, flags, preempt_count, common_pid (the thread).
  record_.assign(schema::kCommonHeaderSize, 0);
  uint16_t common_type = static_cast<uint16_t>(id);
  std::memcpy(record_.data(), &common_type, sizeof(common_type));
  record_[2] = flags;
  record_[3] = preempt_count;
  std::memcpy(record_.data() + 4, &tid, sizeof(tid));
  if (!DecodePayload(model_->types[type->second], &in, &record_)) return false;
  event_at_ = packet_.size() - in.remaining();
  last_timestamp_ = timestamp;
  *out = Record{timestamp, pid, tid, static_cast<uint16_t>(cpu_), id, pending_loss_, record_};
  pending_loss_ = 0;
  return true;
}

StreamFileReader::Status StreamFileReader::Next(Record* out) {
  while (event_at_ >= packet_.size()) {
    if (file_offset_ == file_size_) return Status::kEnd;
    if (!LoadPacket()) return Status::kMalformed;
  }
  return DecodeEvent(out) ? Status::kRecord : Status::kMalformed;
}

}  // namespace udiag::record::ctf
