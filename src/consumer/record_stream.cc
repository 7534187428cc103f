#include "consumer/record_stream.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ipc/record_stream_format.h"
#include "ipc/wire.h"
#include "schema/event_description.h"

namespace udiag::consumer {
namespace {

using base::Errno;

// Reads go into a buffer this large: a few of the daemon's batches.
constexpr size_t kBufferBytes = 4 << 20;
// Most bytes one Poll hands over, so a caller gets back control under load.
constexpr size_t kMaxBytesPerPoll = 32 << 20;

bool DecodeEventType(std::span<const uint8_t> body, record::EventType* type) {
  ipc::Decoder d(body);
  type->id = d.Get<uint32_t>();
  type->system = d.GetBytes();
  type->name = d.GetBytes();
  std::string command = d.GetBytes();
  if (!d.ok()) return false;
  schema::EventDescription desc;
  if (schema::ParseCommand(command, &desc) != 0) return false;
  type->fields = std::move(desc.fields);
  return true;
}

bool DecodeTask(std::span<const uint8_t> body, record::Task* task) {
  ipc::Decoder d(body);
  task->pid = d.Get<uint32_t>();
  task->tid = d.Get<uint32_t>();
  task->comm = d.GetBytes();
  return d.ok();
}

bool DeliverRecords(std::span<const uint8_t> run, RecordSink& sink) {
  record::Record rec;
  for (size_t at = 0; at < run.size();) {
    ipc::RecordEntry entry;
    if (run.size() - at < sizeof(entry)) return false;
    std::memcpy(&entry, run.data() + at, sizeof(entry));
    size_t data_end = sizeof(entry) + size_t{entry.record_size};
    if (entry.size < data_end || entry.size > run.size() - at || entry.record_size < schema::kCommonHeaderSize) {
      return false;
    }
    uint16_t type;
    std::memcpy(&type, run.data() + at + sizeof(entry), sizeof(type));
    rec.timestamp = entry.timestamp;
    rec.pid = entry.pid;
    rec.tid = entry.tid;
    rec.cpu = entry.cpu;
    rec.event_id = type;
    rec.lost_before = entry.lost_before;
    rec.data = run.subspan(at + sizeof(entry), entry.record_size);
    sink.OnRecord(rec);
    at += entry.size;
  }
  return true;
}

}  // namespace

RecordStream::RecordStream(ConsumerClient control, base::ScopedFd stream)
    : control_(std::move(control)), stream_(std::move(stream)), buf_(kBufferBytes) {}

base::ErrorOr<std::unique_ptr<RecordStream>> RecordStream::Open(const std::string& dir,
                                                                const std::string& instance) {
  auto control = ConsumerClient::Connect(dir);
  if (!control.ok()) return Errno{control.error()};
  auto stream = control->OpenRecordStream(instance);
  if (!stream.ok()) return Errno{stream.error()};
  return std::unique_ptr<RecordStream>(new RecordStream(std::move(control).value(), std::move(stream).value()));
}

int RecordStream::Poll(int timeout_ms, RecordSink& sink) {
  pollfd p{stream_.get(), POLLIN, 0};
  int n = poll(&p, 1, timeout_ms);
  if (n < 0) return errno == EINTR ? ETIMEDOUT : errno;
  if (n == 0) return ETIMEDOUT;
  for (size_t taken = 0; taken < kMaxBytesPerPoll;) {
    if (begin_ > 0 && (end_ == begin_ || buf_.size() - end_ < ipc::kMaxFrameBytes)) {
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    ssize_t got = read(stream_.get(), buf_.data() + end_, buf_.size() - end_);
    if (got < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : errno;
    }
    if (got == 0) return DeliverFrames(sink) && begin_ == end_ ? EPIPE : EPROTO;
    end_ += got;
    taken += got;
    bytes_received_ += got;
    if (!DeliverFrames(sink)) return EPROTO;
  }
  return 0;
}

bool RecordStream::DeliverFrames(RecordSink& sink) {
  while (end_ - begin_ >= sizeof(ipc::FrameHeader)) {
    ipc::FrameHeader header;
    std::memcpy(&header, buf_.data() + begin_, sizeof(header));
    if (header.bytes > ipc::kMaxFrameBytes) return false;
    size_t frame = sizeof(header) + ipc::PadTo8(header.bytes);
    if (end_ - begin_ < frame) return true;  // the rest comes with the next read
    std::span<const uint8_t> body(buf_.data() + begin_ + sizeof(header), header.bytes);
    switch (header.kind) {
      case ipc::FrameKind::kEventType: {
        record::EventType type;
        if (!DecodeEventType(body, &type)) return false;
        sink.OnEventType(type);
        break;
      }
      case ipc::FrameKind::kTask: {
        record::Task task;
        if (!DecodeTask(body, &task)) return false;
        sink.OnTask(task);
        break;
      }
      case ipc::FrameKind::kRecords:
        if (!DeliverRecords(body, sink)) return false;
        break;
      case ipc::FrameKind::kLost: {
        uint64_t count;
        if (body.size() != sizeof(count)) return false;
        std::memcpy(&count, body.data(), sizeof(count));
        sink.OnLost(count);
        break;
      }
      default:
        return false;
    }
    begin_ += frame;
  }
  return true;
}

}  // namespace udiag::consumer
