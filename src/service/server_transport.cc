// The Server's side of the control socket: accepting clients, reading
// their requests, queueing and flushing replies, closing connections.
#include "service/server.h"

#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "service/server_epoll.h"

namespace udiag::service {
namespace {

using base::ScopedFd;

constexpr size_t kMaxOutboxBytes = 64 << 20;

}  // namespace

void Server::Accept() {
  for (;;) {
    auto fd = base::AcceptSeqpacket(listener_.get());
    if (!fd.ok()) return;
    auto peer = base::GetPeerCredentials(fd->get());
    if (!peer.ok()) continue;
    auto conn = std::make_unique<Connection>();
    conn->id = next_conn_id_++;
    conn->peer = peer.value();
    conn->caller = options_.policy.Evaluate(conn->peer);
    int sndbuf = 4 << 20;
    setsockopt(fd->get(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    conn->fd = std::move(fd).value();
    if (AddToEpoll(epoll_.get(), conn->fd.get(), EPOLLIN, Pack(kConnection, conn->id))) continue;
    connections_[conn->id] = std::move(conn);
  }
}

void Server::HandleReadable(Connection& conn) {
  uint64_t id = conn.id;
  std::vector<uint8_t> bytes;
  std::vector<ScopedFd> fds;
  // A bounded batch per wake-up so one chatty client cannot starve the rest.
  for (int i = 0; i < 64; ++i) {
    int err = base::ReceiveMessage(conn.fd.get(), &bytes, &fds, /*dontwait=*/true);
    if (err == EAGAIN) return;
    if (err) {
      CloseConnection(id);
      return;
    }
    HandleMessage(conn, bytes, fds);
    UpdateHoldBack();  // the request may have changed what holds back
    if (!connections_.contains(id)) return;
  }
}

void Server::CloseConnection(uint64_t conn_id) {
  auto it = connections_.find(conn_id);
  if (it == connections_.end()) return;
  std::unique_ptr<Connection> conn = std::move(it->second);
  connections_.erase(it);
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, conn->fd.get(), nullptr);
  if (options_.verbose) fmt::print(stderr, "udiagd: pid {} disconnected\n", conn->peer.pid);
  // Exit, exec or a crash: the process's enablers die with it. Its rings
  // stay until drained, so everything it committed is still delivered.
  for (const Enabler& en : conn->enablers) registry_->Put(en.event);
  for (Event* event : conn->perf_events) {
    SetPerfRefs(event, -1);
    registry_->Put(event);
  }
  if (conn->pipe_instance) conn->pipe_instance->RemoveReader();
  if (conn->record_stream) EndRecordStream(*conn);
  ReleaseAutoEnables(*conn);
  RemoveOwnedInstances(*conn);
  ResolveDeferred(false);
}

void Server::Send(Connection& conn, std::vector<uint8_t> message) {
  if (conn.outbox.empty()) {
    int err = base::SendMessage(conn.fd.get(), message);
    if (err == 0) return;
    if (err != EAGAIN) return;  // the peer is gone; the read side will notice
  }
  conn.outbox_bytes += message.size();
  conn.outbox.push_back(std::move(message));
  if (conn.outbox_bytes > kMaxOutboxBytes) {
    fmt::print(stderr, "udiagd: pid {} does not read its connection; dropping it\n", conn.peer.pid);
    shutdown(conn.fd.get(), SHUT_RDWR);
    return;
  }
  UpdatePollMask(conn);
}

void Server::FlushOutbox(Connection& conn) {
  size_t sent = 0;
  for (; sent < conn.outbox.size(); ++sent) {
    if (base::SendMessage(conn.fd.get(), conn.outbox[sent]) != 0) break;
    conn.outbox_bytes -= conn.outbox[sent].size();
  }
  conn.outbox.erase(conn.outbox.begin(), conn.outbox.begin() + sent);
  UpdatePollMask(conn);
}

void Server::UpdatePollMask(Connection& conn) {
  epoll_event ev{};
  ev.events = conn.outbox.empty() ? EPOLLIN : (EPOLLIN | EPOLLOUT);
  ev.data.u64 = Pack(kConnection, conn.id);
  epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, conn.fd.get(), &ev);
}

void Server::SendReply(Connection& conn, uint32_t seq, int error) {
  ipc::Encoder e = ipc::StartMessage(ipc::MsgType::kReply, seq, error);
  Send(conn, std::move(e.bytes()));
}

void Server::SendChunked(Connection& conn, uint32_t seq, const std::string& bytes) {
  for (size_t off = 0; off < bytes.size(); off += kChunkBytes) {
    ipc::Encoder e = ipc::StartMessage(ipc::MsgType::kData, seq);
    size_t n = std::min(kChunkBytes, bytes.size() - off);
    e.bytes().insert(e.bytes().end(), bytes.begin() + off, bytes.begin() + off + n);
    Send(conn, std::move(e.bytes()));
  }
  SendReply(conn, seq, 0);
}

}  // namespace udiag::service
