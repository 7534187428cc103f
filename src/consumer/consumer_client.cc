#include "consumer/consumer_client.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>

#include "base/client_timeout.h"
#include "base/daemon_dir.h"
#include "base/unix_socket.h"

namespace udiag::consumer {
namespace {

using base::Errno;
using base::ErrorOr;
using Clock = std::chrono::steady_clock;

// How often a pipe stream looks at its stop flag when nothing arrives.
constexpr int kStopCheckMs = 100;
// Upper bound on the drain after a stop: other producers may keep the pipe
// busy forever, and their events are not what the caller waits for.
constexpr auto kMaxDrain = std::chrono::seconds(2);

template <typename Body>
ipc::Encoder Encode(const Body& body) {
  ipc::Encoder e;
  body.Encode(e);
  return e;
}

int MillisecondsUntil(Clock::time_point deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(left.count(), 0));
}

}  // namespace

bool IsNoDaemonError(int err) { return err == ENOENT || err == ECONNREFUSED; }

ErrorOr<ConsumerClient> ConsumerClient::Connect(const std::string& dir) {
  auto fd = base::ConnectSeqpacket(base::ControlSocketPath(base::ResolveDaemonDir(dir)), base::ClientTimeoutMs());
  if (!fd.ok()) return Errno{fd.error()};
  ConsumerClient client(std::move(fd).value());
  if (int err = client.Call(ipc::MsgType::kHello, Encode(ipc::Hello{.role = ipc::Role::kConsumer}))) {
    return Errno{err};
  }
  return client;
}

ErrorOr<std::string> ConsumerClient::Read(const std::string& path) {
  std::string data;
  if (int err = Call(ipc::MsgType::kTreeRead, Encode(ipc::PathRequest{path}), &data)) return Errno{err};
  return data;
}

int ConsumerClient::Write(const std::string& path, std::string_view text, bool append) {
  ipc::TreeWriteRequest req{path, append, std::string(text)};
  return Call(ipc::MsgType::kTreeWrite, Encode(req));
}

ErrorOr<std::vector<std::pair<std::string, bool>>> ConsumerClient::List(const std::string& path) {
  std::string data;
  if (int err = Call(ipc::MsgType::kTreeList, Encode(ipc::PathRequest{path}), &data)) return Errno{err};
  ipc::Decoder d(std::span(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
  ipc::TreeListReply reply;
  if (!reply.Decode(d)) return Errno{EPROTO};
  return std::move(reply.entries);
}

int ConsumerClient::AutoEnable(const std::string& glob, const std::string& instance, const std::string& filter,
                               const std::string& trigger) {
  return Call(ipc::MsgType::kAutoEnable, Encode(ipc::AutoEnableRequest{glob, instance, filter, trigger}));
}

pid_t ConsumerClient::DaemonPid() const {
  auto peer = base::GetPeerCredentials(fd_.get());
  return peer.ok() ? peer->pid : 0;
}

int ConsumerClient::Mkdir(const std::string& path, bool owned) {
  return Call(ipc::MsgType::kTreeMkdir, Encode(ipc::MkdirRequest{path, owned}));
}

int ConsumerClient::Rmdir(const std::string& path) {
  return Call(ipc::MsgType::kTreeRmdir, Encode(ipc::PathRequest{path}));
}

ErrorOr<ConsumerClient::RecordStreamFds> ConsumerClient::OpenRecordStream(const std::string& instance, bool pages,
                                                                          const PageFile* file) {
  ipc::RecordStreamRequest request{instance, pages};
  std::vector<int> fds_sent;
  if (file) {
    request.file_region_bytes = file->region_bytes;
    request.file_cpus = file->cpus;
    fds_sent.push_back(file->fd);
  }
  uint32_t seq;
  if (int err = SendRequest(ipc::MsgType::kRecordStream, Encode(request), &seq, fds_sent)) return Errno{err};
  ipc::MessageHeader header;
  std::string body;
  std::vector<base::ScopedFd> fds;
  if (int err = ReceiveBounded(seq, &header, &body, &fds)) return Errno{err};
  if (header.type != ipc::MsgType::kReply) return Errno{EPROTO};
  if (header.error != 0) return Errno{header.error > 0 ? header.error : EPROTO};
  if (fds.size() != 2) return Errno{EPROTO};
  ipc::RecordStreamReply reply;
  ipc::Decoder decoder({reinterpret_cast<const uint8_t*>(body.data()), body.size()});
  if (!reply.Decode(decoder)) return Errno{EPROTO};
  return RecordStreamFds{std::move(fds[0]), std::move(fds[1]), reply.writes_file && file};
}

int ConsumerClient::StreamPipe(const std::string& path, const ChunkCallback& on_chunk,
                               const std::atomic<bool>* stop, std::chrono::milliseconds drain_quiet) {
  uint32_t seq;
  if (int err = SendRequest(ipc::MsgType::kTreePipe, Encode(ipc::PathRequest{path}), &seq)) return err;
  bool draining = false;
  Clock::time_point quiet_until, drain_end;
  for (;;) {
    int timeout_ms = kStopCheckMs;
    if (!draining && stop && stop->load()) {
      draining = true;
      quiet_until = Clock::now() + drain_quiet;
      drain_end = Clock::now() + kMaxDrain;
    }
    if (draining) {
      timeout_ms = MillisecondsUntil(std::min(quiet_until, drain_end));
      if (timeout_ms == 0) return 0;
    }
    ipc::MessageHeader header;
    std::string chunk;
    int err = ReceiveFor(seq, timeout_ms, &header, &chunk);
    if (err == ETIMEDOUT) continue;
    if (err) return err;
    // The pipe never ends on its own: a reply can only be a refusal.
    if (header.type == ipc::MsgType::kReply) return header.error > 0 ? header.error : EPROTO;
    if (header.type != ipc::MsgType::kData) return EPROTO;
    if (!on_chunk(chunk)) return 0;
    quiet_until = Clock::now() + drain_quiet;
  }
}

int ConsumerClient::SendRequest(ipc::MsgType type, const ipc::Encoder& body, uint32_t* seq, std::span<const int> fds) {
  *seq = next_seq_++;
  ipc::Encoder message = ipc::StartMessage(type, *seq);
  message.bytes().insert(message.bytes().end(), body.bytes().begin(), body.bytes().end());
  return base::TimeoutErrno(base::SendMessage(fd_.get(), message.bytes(), fds));
}

int ConsumerClient::ReceiveFor(uint32_t seq, int timeout_ms, ipc::MessageHeader* header, std::string* body,
                               std::vector<base::ScopedFd>* fds_out) {
  std::vector<uint8_t> bytes;
  std::vector<base::ScopedFd> fds;
  for (;;) {
    if (timeout_ms >= 0) {
      pollfd p{fd_.get(), POLLIN, 0};
      int n = poll(&p, 1, timeout_ms);
      // A signal counts as a timeout so the caller gets to look at its stop flag.
      if (n == 0 || (n < 0 && errno == EINTR)) return ETIMEDOUT;
      if (n < 0) return errno;
    }
    if (int err = base::ReceiveMessage(fd_.get(), &bytes, &fds)) return err;
    ipc::Decoder rest({});
    if (!ipc::SplitMessage(bytes, header, &rest)) return EPROTO;
    if (header->seq != seq) continue;
    if (fds_out) *fds_out = std::move(fds);
    std::span<const uint8_t> payload = rest.Rest();
    body->assign(reinterpret_cast<const char*>(payload.data()), payload.size());
    return 0;
  }
}

int ConsumerClient::ReceiveBounded(uint32_t seq, ipc::MessageHeader* header, std::string* body,
                                   std::vector<base::ScopedFd>* fds) {
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(base::ClientTimeoutMs());
  for (;;) {
    // ReceiveFor reports a signal as a timeout too: only the deadline ends the wait.
    int err = ReceiveFor(seq, MillisecondsUntil(deadline), header, body, fds);
    if (err != ETIMEDOUT || Clock::now() >= deadline) return err;
  }
}

int ConsumerClient::CollectReply(uint32_t seq, std::string* data) {
  for (;;) {
    ipc::MessageHeader header;
    std::string body;
    // The bound is on the daemon's silence: a long answer may take its time.
    if (int err = ReceiveBounded(seq, &header, &body)) return err;
    if (header.type == ipc::MsgType::kReply) return header.error >= 0 ? header.error : EPROTO;
    if (header.type != ipc::MsgType::kData || !data) return EPROTO;
    data->append(body);
  }
}

int ConsumerClient::Call(ipc::MsgType type, const ipc::Encoder& body, std::string* data) {
  uint32_t seq;
  if (int err = SendRequest(type, body, &seq)) return err;
  return CollectReply(seq, data);
}

}  // namespace udiag::consumer
