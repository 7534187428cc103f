#include "service/record_stream_sender.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "ipc/wire.h"
#include "schema/event_description.h"

namespace udiag::service {
namespace {

// Bytes gathered before a write: few syscalls, bounded memory.
constexpr size_t kBatchBytes = 1 << 20;
// Largest run of records in one frame, leaving room for one more entry.
constexpr size_t kRunBytes = ipc::kMaxFrameBytes - 64 * 1024;

uint16_t TypeOf(const ipc::RecordEntry& entry, const uint8_t* at) {
  uint16_t type = 0;
  if (entry.record_size >= sizeof(type)) std::memcpy(&type, at + sizeof(ipc::RecordEntry), sizeof(type));
  return type;
}

}  // namespace

RecordStreamSender::RecordStreamSender(base::ScopedFd socket, Instance* instance, const EventRegistry* registry,
                                       CommLookup comm)
    : socket_(std::move(socket)), instance_(instance), registry_(registry), comm_(std::move(comm)) {
  out_.reserve(kBatchBytes + ipc::kMaxFrameBytes);
}

int RecordStreamSender::Pump() {
  for (;;) {
    while (out_.size() < kBatchBytes && Fill()) {
    }
    if (out_.size() == out_sent_) return 0;
    if (int err = Flush()) return err;
  }
}

int RecordStreamSender::Flush() {
  while (out_sent_ < out_.size()) {
    ssize_t n = send(socket_.get(), out_.data() + out_sent_, out_.size() - out_sent_, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EWOULDBLOCK ? EAGAIN : errno;
    }
    out_sent_ += n;
  }
  out_.clear();
  out_sent_ = 0;
  return 0;
}

bool RecordStreamSender::Fill() {
  TraceBuffer& buffer = instance_->buffer();
  std::span<const uint8_t> run = buffer.FrontRun();
  if (run.empty()) {
    // Losses with no entry after them go out once the buffer is empty.
    if (!buffer.pending_lost()) return false;
    AppendLost(buffer.TakePendingLost());
    return true;
  }
  size_t bytes = 0, count = 0;
  uint64_t dropped = 0;  // records of an event already gone: no type to send
  while (bytes < run.size() && bytes < kRunBytes) {
    const uint8_t* at = run.data() + bytes;
    ipc::RecordEntry entry;
    std::memcpy(&entry, at, sizeof(entry));
    uint16_t type = TypeOf(entry, at);
    bool new_task = entry.tid != last_tid_ && !tasks_sent_.contains(entry.tid);
    if (!TypeSent(type) || new_task) {
      if (count > 0) break;  // send the run so far; the new one starts the next
      const Event* event = registry_->FindById(type);
      if (!event) {
        dropped = 1 + entry.lost_before;
        bytes = entry.size;
        break;
      }
      if (!TypeSent(type)) AppendEventType(*event);
      if (new_task) AppendTask(entry.pid, entry.tid);
    }
    last_tid_ = entry.tid;
    bytes += entry.size;
    ++count;
  }
  if (dropped) {
    buffer.Consume(bytes, 1);
    AppendLost(dropped);
    return true;
  }
  AppendFrame(ipc::FrameKind::kRecords, run.first(bytes));
  buffer.Consume(bytes, count);
  return true;
}

void RecordStreamSender::AppendFrame(ipc::FrameKind kind, std::span<const uint8_t> body) {
  ipc::FrameHeader header{kind, static_cast<uint32_t>(body.size())};
  size_t at = out_.size();
  out_.resize(at + sizeof(header) + ipc::PadTo8(header.bytes));
  std::memcpy(out_.data() + at, &header, sizeof(header));
  std::memcpy(out_.data() + at + sizeof(header), body.data(), body.size());
  std::memset(out_.data() + at + sizeof(header) + body.size(), 0, ipc::PadTo8(header.bytes) - body.size());
}

void RecordStreamSender::AppendEventType(const Event& event) {
  std::string command = schema::DynamicEventsLine(event.desc).substr(2);  // without "u:"
  ipc::Encoder e;
  e.Put<uint32_t>(event.id).PutBytes(event.system()).PutBytes(event.tp_name).PutBytes(command);
  AppendFrame(ipc::FrameKind::kEventType, e.bytes());
  size_t slot = event.id - EventRegistry::kFirstId;
  if (slot >= type_sent_.size()) type_sent_.resize(slot + 1);
  type_sent_[slot] = true;
}

void RecordStreamSender::AppendTask(uint32_t pid, uint32_t tid) {
  ipc::Encoder e;
  e.Put(pid).Put(tid).PutBytes(comm_(tid));
  AppendFrame(ipc::FrameKind::kTask, e.bytes());
  tasks_sent_.insert(tid);
}

void RecordStreamSender::AppendLost(uint64_t count) {
  ipc::Encoder e;
  e.Put(count);
  AppendFrame(ipc::FrameKind::kLost, e.bytes());
}

bool RecordStreamSender::TypeSent(uint32_t id) const {
  size_t slot = id - EventRegistry::kFirstId;
  return id >= EventRegistry::kFirstId && slot < type_sent_.size() && type_sent_[slot];
}

void RecordStreamSender::ForgetType(uint32_t id) {
  if (TypeSent(id)) type_sent_[id - EventRegistry::kFirstId] = false;
}

}  // namespace udiag::service
