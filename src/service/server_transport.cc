// The Server's side of the control socket: accepting clients, reading
// their requests, queueing and flushing replies, closing connections.
#include "service/server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "base/errno_name.h"
#include "base/tsc.h"
#include "service/server_epoll.h"

namespace udiag::service {
namespace {

using base::ScopedFd;

// Connections refused at accept held for their Hello's answer: how many at
// once, and for how long at most.
constexpr size_t kMaxPendingRefusals = 64;
constexpr uint64_t kRefusalGraceNs = 1'000'000'000;
// How long the listener is left alone after accept() ran out of fds.
constexpr uint64_t kAcceptBackoffNs = 100'000'000;

uint64_t QueuedCost(const std::vector<uint8_t>& message) { return message.capacity() + kQueuedMessageOverhead; }

}  // namespace

void Server::Accept() {
  for (;;) {
    auto fd = base::AcceptSeqpacket(listener_.get());
    if (!fd.ok()) {
      if (fd.error() == EMFILE || fd.error() == ENFILE) OnOutOfFds(fd.error());
      return;
    }
    out_of_fds_ = false;  // that episode is over
    auto peer = base::GetPeerCredentials(fd->get());
    if (!peer.ok()) continue;
    auto conn = std::make_unique<Connection>();
    conn->id = next_conn_id_++;
    conn->peer = peer.value();
    conn->caller = options_.policy.Evaluate(conn->peer);
    if (!quotas_.TryCharge(conn->peer.uid, conn->caller.privileged, Resource::kFds, 1)) {
      // Held until its Hello is answered with EMFILE, but only a few at a
      // time and briefly: beyond that it is just closed.
      if (refusals_ >= kMaxPendingRefusals) continue;
      conn->refusal = Refuse(*conn, Resource::kFds, EMFILE);
      conn->refusal_deadline_ns = base::MonotonicNs() + kRefusalGraceNs;
      ++refusals_;
    }
    int sndbuf = 4 << 20;
    setsockopt(fd->get(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    conn->fd = std::move(fd).value();
    if (AddToEpoll(epoll_.get(), conn->fd.get(), EPOLLIN, Pack(kConnection, conn->id))) {
      if (conn->refusal) {
        --refusals_;
      } else {
        quotas_.Release(conn->peer.uid, Resource::kFds, 1);
      }
      continue;
    }
    connections_[conn->id] = std::move(conn);
  }
}

void Server::OnOutOfFds(int err) {
  if (!out_of_fds_) {
    fmt::print(stderr, "udiagd: accept: {}; refusing new connections until fds are free\n",
               base::DescribeErrno(err));
    out_of_fds_ = true;
  }
  // The pending connection would keep the listener readable (a busy loop):
  // give up the reserve fd to accept it, and close it at once.
  reserve_fd_.Reset();
  if (auto fd = base::AcceptSeqpacket(listener_.get()); fd.ok()) fd->Reset();
  reserve_fd_.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
  // Then leave the listener alone for a while; clients already in keep
  // being served.
  epoll_event ev{};
  ev.data.u64 = Pack(kListener, 0);
  epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, listener_.get(), &ev);
  listening_paused_until_ = base::MonotonicNs() + kAcceptBackoffNs;
}

void Server::ResumeListeningWhenDue(uint64_t now) {
  if (listening_paused_until_ == 0 || now < listening_paused_until_) return;
  listening_paused_until_ = 0;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = Pack(kListener, 0);
  epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, listener_.get(), &ev);
}

void Server::ExpireRefusals(uint64_t now) {
  if (refusals_ == 0) return;
  std::vector<uint64_t> expired;
  for (const auto& [id, conn] : connections_) {
    if (conn->refusal && now >= conn->refusal_deadline_ns) expired.push_back(id);
  }
  for (uint64_t id : expired) CloseConnection(id);
}

int Server::Refuse(const Connection& conn, Resource r, int err) {
  if (quotas_.FirstRefusal(conn.peer.uid, r)) {
    static const char* const kWhat[] = {"connections", "queued replies", "events", "enablers", "ring memory"};
    fmt::print(stderr, "udiagd: uid {} reached its limit of {} ({}); refusing with {}\n", conn.peer.uid,
               kWhat[static_cast<int>(r)], quotas_.Limit(r), base::ErrnoName(err));
  }
  return err;
}

void Server::HandleReadable(Connection& conn) {
  uint64_t id = conn.id;
  std::vector<uint8_t> bytes;
  std::vector<ScopedFd> fds;
  // A bounded batch per wake-up so one chatty client cannot starve the rest.
  for (int i = 0; i < 64; ++i) {
    int err = conn.unread ? ECONNRESET : base::ReceiveMessage(conn.fd.get(), &bytes, &fds, /*dontwait=*/true);
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
  if (conn->refusal) {
    --refusals_;
  } else {
    quotas_.Release(conn->peer.uid, Resource::kFds, 1);
  }
  quotas_.Release(conn->peer.uid, Resource::kQueuedBytes, conn->outbox_bytes);
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, conn->fd.get(), nullptr);
  if (options_.verbose) fmt::print(stderr, "udiagd: pid {} disconnected\n", conn->peer.pid);
  // Exit, exec or a crash: the process's enablers die with it. Its rings
  // stay until drained, so everything it committed is still delivered.
  for (const Enabler& en : conn->enablers) registry_->Put(en.event);
  quotas_.Release(conn->peer.uid, Resource::kEnablers, conn->enablers.size());
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
  if (conn.unread) return;
  if (conn.outbox.empty()) {
    int err = base::SendMessage(conn.fd.get(), message);
    if (err == 0) return;
    if (err != EAGAIN) return;  // the peer is gone; the read side will notice
  }
  uint64_t cost = QueuedCost(message);
  conn.outbox_bytes += cost;
  quotas_.Charge(conn.peer.uid, Resource::kQueuedBytes, cost);
  conn.outbox.push_back(std::move(message));
  if (conn.outbox_bytes > options_.limits.queued_bytes_per_connection ||
      quotas_.Over(conn.peer.uid, conn.caller.privileged, Resource::kQueuedBytes)) {
    DropUnread(conn);
    return;
  }
  UpdatePollMask(conn);
}

// A client over its limit of unread replies loses them and its connection;
// it is closed at the end of this loop turn (CloseUnread), not here, as the
// caller may be walking the connections.
void Server::DropUnread(Connection& conn) {
  fmt::print(stderr, "udiagd: pid {} (uid {}) does not read its replies ({} bytes queued); dropping it\n",
             conn.peer.pid, conn.peer.uid, conn.outbox_bytes);
  quotas_.Release(conn.peer.uid, Resource::kQueuedBytes, conn.outbox_bytes);
  conn.outbox_bytes = 0;
  std::vector<std::vector<uint8_t>>().swap(conn.outbox);
  conn.unread = true;
  shutdown(conn.fd.get(), SHUT_RDWR);
  unread_.push_back(conn.id);
}

void Server::CloseUnread() {
  std::vector<uint64_t> ids;
  ids.swap(unread_);
  for (uint64_t id : ids) CloseConnection(id);
}

void Server::FlushOutbox(Connection& conn) {
  size_t sent = 0;
  uint64_t freed = 0;
  for (; sent < conn.outbox.size(); ++sent) {
    if (base::SendMessage(conn.fd.get(), conn.outbox[sent]) != 0) break;
    freed += QueuedCost(conn.outbox[sent]);
  }
  conn.outbox.erase(conn.outbox.begin(), conn.outbox.begin() + sent);
  conn.outbox_bytes -= freed;
  quotas_.Release(conn.peer.uid, Resource::kQueuedBytes, freed);
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
