#include "consumer/record_stream.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ipc/record_stream_format.h"
#include "ipc/wire.h"
#include "schema/event_description.h"

namespace udiag::consumer {
namespace {

using base::Errno;

// Read frames are freed in steps this large, so the daemon refills the
// ring while the rest is read.
constexpr size_t kReleaseBytes = 512 << 10;
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

RecordStream::RecordStream(ConsumerClient control, base::ScopedFd socket, std::unique_ptr<ipc::StreamRing> ring,
                           bool writes_file)
    : control_(std::move(control)),
      socket_(std::move(socket)),
      ring_(std::move(ring)),
      need_(sizeof(ipc::FrameHeader)),
      writes_file_(writes_file) {}

base::ErrorOr<std::unique_ptr<RecordStream>> RecordStream::Open(const std::string& dir,
                                                                const std::string& instance, bool pages,
                                                                const ConsumerClient::PageFile* file) {
  auto control = ConsumerClient::Connect(dir);
  if (!control.ok()) return Errno{control.error()};
  auto stream = control->OpenRecordStream(instance, pages, file);
  if (!stream.ok()) return Errno{stream.error()};
  auto ring = ipc::StreamRing::Map(std::move(stream->ring));
  if (!ring.ok()) return Errno{ring.error()};
  return std::unique_ptr<RecordStream>(new RecordStream(std::move(control).value(), std::move(stream->socket),
                                                       std::move(ring).value(), stream->writes_file));
}

int RecordStream::Poll(int timeout_ms, RecordSink& sink, bool doze) {
  if (int err = WaitForFrame(timeout_ms, doze && timeout_ms >= 0)) {
    if (err != EPIPE) return err;
    // The daemon ended the stream: what it wrote before is still ours.
    if (!DeliverFrames(sink)) return EPROTO;
    return ring_->Readable().empty() ? EPIPE : EPROTO;
  }
  for (uint64_t taken = 0; taken < kMaxBytesPerPoll;) {
    const uint64_t before = bytes_received_;
    if (!DeliverFrames(sink)) return EPROTO;
    if (bytes_received_ == before) break;
    taken += bytes_received_ - before;
  }
  return 0;
}

int RecordStream::WaitForFrame(int timeout_ms, bool doze) {
  for (;;) {
    if (ring_->Readable().size() >= need_) return 0;
    if (hung_up_) return EPIPE;
    if (ring_->SleepUnlessReadable(need_, doze)) {
      ring_->Awake();
      return 0;
    }
    pollfd p{socket_.get(), POLLIN, 0};
    int n = poll(&p, 1, timeout_ms);
    ring_->Awake();
    if (n < 0) return errno == EINTR ? ETIMEDOUT : errno;
    if (n == 0) return ring_->Readable().size() >= need_ ? 0 : ETIMEDOUT;
    // Wake-up bytes; end of file when the daemon ended the stream.
    char bytes[64];
    ssize_t got;
    while ((got = recv(socket_.get(), bytes, sizeof(bytes), MSG_DONTWAIT)) > 0) {
    }
    if (got == 0) hung_up_ = true;
  }
}

bool RecordStream::DeliverFrames(RecordSink& sink) {
  std::span<const uint8_t> bytes = ring_->Readable();
  size_t at = 0, released = 0;
  // Frees what was read now and then, so the daemon can refill it meanwhile.
  auto release = [&] {
    if (at == released) return;
    if (ring_->Release(at - released)) [[maybe_unused]] ssize_t n = send(socket_.get(), "r", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    bytes_received_ += at - released;
    released = at;
  };
  need_ = sizeof(ipc::FrameHeader);
  while (bytes.size() - at >= sizeof(ipc::FrameHeader)) {
    ipc::FrameHeader header;
    std::memcpy(&header, bytes.data() + at, sizeof(header));
    if (header.bytes > ipc::kMaxFrameBytes) return false;
    size_t frame = sizeof(header) + ipc::PadTo8(header.bytes);
    if (bytes.size() - at < frame) {
      need_ = frame;  // the rest comes later
      break;
    }
    std::span<const uint8_t> body = bytes.subspan(at + sizeof(header), header.bytes);
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
      case ipc::FrameKind::kPage:
      case ipc::FrameKind::kPoolPage: {
        ipc::PageFrame page;
        const bool in_pool = header.kind == ipc::FrameKind::kPoolPage;
        if (body.size() != (in_pool ? sizeof(page) : ipc::kPageFrameBytes)) return false;
        std::memcpy(&page, body.data(), sizeof(page));
        if (in_pool && page.pool_slot >= ring_->pool_pages()) return false;
        const std::span<const uint8_t> bytes =
            in_pool ? std::span<const uint8_t>(ring_->pool_page(page.pool_slot), ipc::kStreamPageSize)
                    : body.subspan(sizeof(page));
        const PageCounts counts{page.events, page.only_type, page.data_bytes, page.lost_before};
        if (page.cpu > UINT16_MAX || !sink.OnPage(static_cast<uint16_t>(page.cpu), bytes, counts)) return false;
        break;
      }
      case ipc::FrameKind::kFilePage: {
        ipc::PageFrame page;
        if (!writes_file_ || body.size() < sizeof(page)) return false;
        std::memcpy(&page, body.data(), sizeof(page));
        const std::span<const uint8_t> bytes = body.subspan(sizeof(page));
        if (bytes.size() != (page.only_type == 0 ? ipc::kStreamPageSize : 0) || page.cpu > UINT16_MAX) return false;
        const PageCounts counts{page.events, page.only_type, page.data_bytes, page.lost_before};
        if (!sink.OnFilePage(static_cast<uint16_t>(page.cpu), bytes, counts)) return false;
        break;
      }
      case ipc::FrameKind::kFileProgress: {
        ipc::FileProgress progress;
        if (!writes_file_ || body.size() != sizeof(progress)) return false;
        std::memcpy(&progress, body.data(), sizeof(progress));
        if (progress.cpu > UINT16_MAX || !sink.OnPagesOnDisk(static_cast<uint16_t>(progress.cpu), progress.bytes)) {
          return false;
        }
        break;
      }
      case ipc::FrameKind::kFileError: {
        ipc::FileError error;
        if (!writes_file_ || body.size() != sizeof(error)) return false;
        std::memcpy(&error, body.data(), sizeof(error));
        if (error.error <= 0 || !sink.OnFileError(error.error)) return false;
        break;
      }
      case ipc::FrameKind::kFileSynced:
        if (!writes_file_ || !body.empty() || !sink.OnFileSynced()) return false;
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
    at += frame;
    if (at - released >= kReleaseBytes) release();
  }
  release();
  return true;
}

}  // namespace udiag::consumer
