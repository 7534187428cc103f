// Consumer requests: the tracefs tree (read, list, trace_pipe, mkdir,
// rmdir), record streams, and feeding the readers they opened.
#include "service/server.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>

#include "service/server_epoll.h"
#include "service/trace_text.h"

namespace udiag::service {
namespace {

using base::ScopedFd;

}  // namespace

// Read-after-write, as with the kernel's synchronous writes: a read that
// starts after a producer's write returned sees its event, so the rings are
// drained first (records already published are all there is to take), the
// pages their producers are still filling included. A write to the tree
// (tracing_on, enable) likewise comes after the events written before it.
// Not for a record stream's own connection: the drain may close broken
// streams' connections, and `conn` must outlive the request.
void Server::DrainBeforeRequest(const Connection& conn) {
  if (conn.record_stream) return;
  tsc_clock_.Sample();
  DrainRings(/*flush_open_pages=*/true);
}

int Server::OnTreeRead(Connection& conn, ipc::Decoder& body, uint32_t seq) {
  ipc::PathRequest req;
  if (!req.Decode(body)) return EPROTO;
  DrainBeforeRequest(conn);
  auto text = tree_->Read(req.path, conn.caller);
  if (!text.ok()) return text.error();
  SendChunked(conn, seq, *text);
  return 0;
}

int Server::OnTreeList(Connection& conn, ipc::Decoder& body, uint32_t seq) {
  ipc::PathRequest req;
  if (!req.Decode(body)) return EPROTO;
  auto entries = tree_->List(req.path, conn.caller);
  if (!entries.ok()) return entries.error();
  ipc::TreeListReply reply;
  for (auto& e : *entries) reply.entries.emplace_back(e.name, e.is_directory);
  ipc::Encoder e;
  reply.Encode(e);
  SendChunked(conn, seq, std::string(e.bytes().begin(), e.bytes().end()));
  return 0;
}

int Server::OnTreePipe(Connection& conn, ipc::Decoder& body, uint32_t seq) {
  ipc::PathRequest req;
  if (!req.Decode(body)) return EPROTO;
  auto instance = tree_->PipeInstance(req.path, conn.caller);
  if (!instance.ok()) return instance.error();
  DrainBeforeRequest(conn);
  if (conn.pipe_instance) conn.pipe_instance->RemoveReader();
  conn.pipe_instance = *instance;
  conn.pipe_instance->AddReader();
  conn.pipe_seq = seq;
  PumpPipes();
  return 0;
}

int Server::OnTreeMkdir(Connection& conn, ipc::Decoder& body) {
  ipc::MkdirRequest req;
  if (!req.Decode(body)) return EPROTO;
  return tree_->Mkdir(req.path, req.owned ? conn.id : 0, conn.caller);
}

int Server::OnTreeRmdir(Connection& conn, ipc::Decoder& body) {
  ipc::PathRequest req;
  if (!req.Decode(body)) return EPROTO;
  auto name = tree_->Rmdir(req.path, conn.caller);
  if (!name.ok()) return name.error();
  ForgetAutoEnables(*name);
  return 0;
}

int Server::OnRecordStream(Connection& conn, ipc::Decoder& body, std::vector<ScopedFd>& fds, uint32_t seq) {
  ipc::RecordStreamRequest req;
  if (!req.Decode(body)) return EPROTO;
  if (!conn.caller.consumer) return EACCES;
  if (conn.record_stream) return EBUSY;  // one stream per connection
  if (!conn.outbox.empty()) return EAGAIN;  // the reply (with its fd) must not overtake queued messages
  Instance* instance = instances_->Find(req.instance);
  if (!instance) return ENOENT;
  // A trace.dat recorder may hand over its file for the pages to go there
  // from here. Anything else it sends (another kind of file, a bad layout)
  // only means the pages come through the stream, as to an older daemon.
  std::unique_ptr<PageFileWriter> file;
  if (req.pages && req.file_cpus > 0 && fds.size() == 1) {
    // The buffer size a recording asked for (--size) is also what its pages
    // may take while the disk is behind.
    auto opened = PageFileWriter::Open(std::move(fds[0]), req.file_region_bytes, req.file_cpus, wake_.get(),
                                       instance->buffer().capacity());
    if (opened.ok()) file = std::move(opened).value();
  }
  // Records go through a shared ring; the socket carries wake-ups both ways.
  // A trace.dat recording's stream has a pool its pages are checked in, so
  // that they are not copied again: a drain round's pages (1024 at most)
  // and those the recorder has yet to read. Pages that go to the file are
  // checked in the file writer's pages instead.
  constexpr uint64_t kPoolPages = 4096;
  auto ring = ipc::StreamRing::Create(ipc::StreamRing::kDefaultDataBytes, req.pages && !file ? kPoolPages : 0);
  if (!ring.ok()) return ring.error();
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) < 0) return errno;
  ScopedFd ours(pair[0]), theirs(pair[1]);
  if (int err = AddToEpoll(epoll_.get(), ours.get(), EPOLLIN, Pack(kRecordStream, conn.id))) return err;
  ipc::Encoder reply = ipc::StartMessage(ipc::MsgType::kReply, seq);
  ipc::RecordStreamReply{file != nullptr}.Encode(reply);
  int reply_fds[] = {theirs.get(), (*ring)->fd()};
  if (int err = base::SendMessage(conn.fd.get(), reply.bytes(), reply_fds)) {
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, ours.get(), nullptr);
    return err;
  }
  conn.record_stream = std::make_unique<RecordStreamSender>(
      std::move(ours), std::move(ring).value(), instance, registry_.get(),
      [this](uint32_t tid) { return TaskComm(tid); }, req.pages, std::move(file));
  instance->AddRecordStream();
  // Its sole reader, recording trace.dat pages: records go straight into them.
  const bool sole_reader = instance->record_streams() == 1 && instance->readers() == 0;
  if (req.pages && sole_reader && !instance->buffer().overwrite()) {
    instance->set_taker(conn.record_stream.get());
  } else {
    instance->buffer().Preallocate();
  }
  return 0;
}

void Server::EndRecordStream(Connection& conn) {
  Instance* instance = conn.record_stream->instance();
  instance->RemoveRecordStream();
  if (instance->taker() == conn.record_stream.get()) instance->set_taker(nullptr);
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, conn.record_stream->fd(), nullptr);
  conn.record_stream.reset();
  conn.stream_waits = false;
}

void Server::RemoveOwnedInstances(const Connection& conn) {
  std::vector<std::string> owned;
  for (const auto& [name, instance] : instances_->named()) {
    if (instance->owner() == conn.id) owned.push_back(name);
  }
  for (const std::string& name : owned) {
    DetachReaders(instances_->Find(name));
    instances_->Remove(name);
    ForgetAutoEnables(name);
  }
}

// Ends other clients' trace_pipe streams (with ENODEV, as a removed file's
// reader gets) and record streams (their socket closes) of `instance`.
void Server::DetachReaders(Instance* instance) {
  for (auto& [_, conn] : connections_) {
    if (conn->pipe_instance == instance) {
      instance->RemoveReader();
      conn->pipe_instance = nullptr;
      SendReply(*conn, conn->pipe_seq, ENODEV);
    }
    if (conn->record_stream && conn->record_stream->instance() == instance) EndRecordStream(*conn);
  }
}

// Sends trace_pipe readers what their instance buffer holds, until a
// reader's socket is full; EPOLLOUT then flushes it and we come back here.
void Server::PumpPipes() {
  std::vector<uint8_t> storage;
  for (auto& [_, conn] : connections_) {
    if (!conn->pipe_instance || conn->unread) continue;
    TraceBuffer& buffer = conn->pipe_instance->buffer();
    while (conn->outbox.empty()) {
      std::string text;
      TraceEntry entry;
      while (text.size() < kChunkBytes - 4096 && buffer.Pop(&entry, &storage)) text += tree_->RenderEntry(entry);
      // Losses with no entry after them are reported once the buffer is empty.
      if (text.empty() && buffer.pending_lost()) text = LostEventsLine(0, buffer.TakePendingLost());
      if (text.empty()) break;
      ipc::Encoder e = ipc::StartMessage(ipc::MsgType::kData, conn->pipe_seq);
      e.bytes().insert(e.bytes().end(), text.begin(), text.end());
      Send(*conn, std::move(e.bytes()));
    }
  }
}

// Copies into record streams what their instance buffer holds, until a
// stream's ring is full; the recorder's wake-up then brings us back.
void Server::PumpRecordStreams() {
  std::vector<uint64_t> broken;
  for (auto& [id, conn] : connections_) {
    if (!conn->record_stream || conn->stream_waits) continue;
    int err = conn->record_stream->Pump();
    if (err == EAGAIN) {
      conn->stream_waits = true;  // until the recorder pokes the socket
    } else if (err) {
      broken.push_back(id);
    }
  }
  for (uint64_t id : broken) CloseConnection(id);
}

bool Server::RecordStreamsMaySleep() {
  bool may = true;
  for (auto& [_, conn] : connections_) {
    if (conn->record_stream) may &= conn->record_stream->MaySleep();
  }
  return may;
}

}  // namespace udiag::service
