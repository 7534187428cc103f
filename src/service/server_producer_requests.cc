// Producer requests: Hello, data files, registration, enablers, rings,
// perf_event attachments.
#include "service/server.h"

#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "base/proc_stat.h"
#include "ring/ring_layout.h"
#include "schema/event_description.h"
#include "service/server_epoll.h"
#include "udiag/udiag.h"

namespace udiag::service {
namespace {

using base::ScopedFd;

constexpr size_t kMaxRingsPerProcess = 4096;
// perf_event fds one process may hold open on udiag's events (the kernel's
// limit is the fd limit; this bounds what a hostile producer makes us keep).
constexpr size_t kMaxPerfEventsPerConnection = 65536;

ino_t InodeOf(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

}  // namespace

int Server::OnHello(Connection& conn, ipc::Decoder& body, uint32_t seq) {
  ipc::Hello hello;
  if (!hello.Decode(body) || conn.greeted) return EPROTO;
  if (hello.version != ipc::kProtocolVersion) return EPROTONOSUPPORT;
  if (hello.role != ipc::Role::kProducer && hello.role != ipc::Role::kConsumer) return EINVAL;
  if (hello.role == ipc::Role::kProducer && !conn.caller.producer) return EACCES;
  if (hello.role == ipc::Role::kProducer && hello.ring_version != 0 &&
      hello.ring_version != ring::kRingVersion) {
    if (!std::exchange(ring_version_refused_, true)) {
      fmt::print(stderr,
                 "udiagd: producer pid {} writes rings of version {}, this udiagd reads version {}: its "
                 "libudiag is from another release; refusing it, and any like it, with EPROTONOSUPPORT\n",
                 conn.peer.pid, hello.ring_version, ring::kRingVersion);
    }
    return EPROTONOSUPPORT;
  }
  conn.role = hello.role;
  conn.greeted = true;
  if (options_.verbose) {
    fmt::print(stderr, "udiagd: {} pid {} uid {} connected\n",
               hello.role == ipc::Role::kProducer ? "producer" : "consumer", conn.peer.pid, conn.peer.uid);
  }
  if (hello.role != ipc::Role::kProducer) {
    SendReply(conn, seq, 0);
    return 0;
  }
  ipc::HelloReply reply;
  reply.first_event_id = status_page_->first_id();
  reply.status_page_bytes = status_page_->capacity();
  reply.clock = static_cast<uint32_t>(clock_domain_);
  reply.ring_bytes = options_.ring_bytes;
  reply.ring_max_bytes = std::max(options_.ring_bytes, options_.ring_max_bytes);
  ipc::Encoder e = ipc::StartMessage(ipc::MsgType::kReply, seq);
  reply.Encode(e);
  int fds[] = {status_page_->fd(), wake_.get()};
  if (int err = base::SendMessage(conn.fd.get(), e.bytes(), fds)) return err;
  return 0;
}

int Server::OnOpenDataFile(Connection& conn, uint32_t seq) {
  // Each data file holds a daemon fd, as a connection does.
  if (!quotas_.TryCharge(conn.peer.uid, conn.caller.privileged, Resource::kFds, 1)) {
    return Refuse(conn, Resource::kFds, EMFILE);
  }
  auto file = std::make_unique<DataFile>();
  file->uid = conn.peer.uid;
  ScopedFd producer_end;
  if (int err = base::SeqpacketPair(&file->daemon_end, &producer_end)) {
    quotas_.Release(conn.peer.uid, Resource::kFds, 1);
    return err;
  }
  file->producer_inode = InodeOf(producer_end.get());
  shutdown(file->daemon_end.get(), SHUT_WR);
  int fd = file->daemon_end.get();
  if (int err = AddToEpoll(epoll_.get(), fd, EPOLLIN | EPOLLRDHUP, Pack(kDataFile, fd))) {
    quotas_.Release(conn.peer.uid, Resource::kFds, 1);
    return err;
  }
  data_files_[fd] = std::move(file);
  ipc::Encoder e = ipc::StartMessage(ipc::MsgType::kReply, seq);
  int fds[] = {producer_end.get()};
  if (int err = base::SendMessage(conn.fd.get(), e.bytes(), fds)) {
    HandleDataFileHangup(fd);
    return err;
  }
  return 0;
}

void Server::HandleDataFileHangup(int fd) {
  auto it = data_files_.find(fd);
  if (it == data_files_.end()) return;
  // Bytes written straight to the socket are not part of the ABI: discard.
  char sink[256];
  while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0) {
  }
  char probe;
  if (recv(fd, &probe, 1, MSG_DONTWAIT | MSG_PEEK) < 0 && errno == EAGAIN) return;  // still open
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
  for (Event* e : it->second->refs) registry_->Put(e);
  quotas_.Release(it->second->uid, Resource::kFds, 1);
  data_files_.erase(it);
}

void Server::AllowWrites(Connection& conn, const Event& event) {
  if (conn.writable.empty()) conn.writable.resize(status_page_->capacity());
  conn.writable[event.id - EventRegistry::kFirstId] = true;
}

Server::DataFile* Server::FindDataFile(const std::vector<ScopedFd>& fds) {
  if (fds.size() != 1) return nullptr;
  ino_t inode = InodeOf(fds[0].get());
  for (auto& [_, file] : data_files_) {
    if (file->producer_inode == inode) return file.get();
  }
  return nullptr;
}

ipc::EventInfo Server::DescribeEvent(const Event& event) const {
  return ipc::EventInfo{event.id, event.desc.min_size, event.locs};
}

int Server::OnRegister(Connection& conn, ipc::Decoder& body, std::vector<ScopedFd>& fds, uint32_t seq) {
  ipc::RegisterRequest req;
  if (!req.Decode(body)) return EPROTO;
  DataFile* file = FindDataFile(fds);
  if (!file) return EBADF;
  // The library checked the struct; the daemon re-checks what it relies on.
  if (req.flags & ~(USER_EVENT_REG_MAX - 1)) return EINVAL;
  if ((req.enable_size != 4 && req.enable_size != 8) || req.enable_addr % req.enable_size ||
      req.enable_bit >= req.enable_size * 8) {
    return EINVAL;
  }
  for (const Enabler& en : conn.enablers) {
    if (en.addr == req.enable_addr && en.bit == req.enable_bit) return EADDRINUSE;
  }
  if (req.command.size() >= schema::kMaxCommandBytes) return EINVAL;
  std::string_view name = std::string_view(req.command).substr(0, req.command.find(' '));
  if (name.find(':') != std::string_view::npos) return EINVAL;
  bool persist = req.flags & USER_EVENT_REG_PERSIST;
  if (persist && !conn.caller.privileged) return EPERM;

  // Memory the kernel would charge to the caller's memcg: ENOMEM beyond it.
  if (!quotas_.TryCharge(conn.peer.uid, conn.caller.privileged, Resource::kEnablers, 1)) {
    return Refuse(conn, Resource::kEnablers, ENOMEM);
  }
  auto found = registry_->FindOrCreate(req.command, req.flags & USER_EVENT_REG_MULTI_FORMAT, persist);
  if (!found.ok()) {
    quotas_.Release(conn.peer.uid, Resource::kEnablers, 1);
    return found.error();
  }
  Event* event = *found;
  auto slot = std::find(file->refs.begin(), file->refs.end(), event);
  uint32_t index = slot - file->refs.begin();
  if (slot == file->refs.end()) {
    file->refs.push_back(event);  // the transient reference becomes the slot's
  } else {
    registry_->Put(event);
  }
  registry_->Get(event);
  conn.enablers.push_back({event, req.enable_addr, req.enable_bit, req.enable_size});
  AllowWrites(conn, *event);

  ipc::RegisterReply reply;
  reply.write_index = index;
  reply.status = event->status;
  reply.event = DescribeEvent(*event);
  SendReplyBody(conn, seq, reply);
  return 0;
}

int Server::OnUnregister(Connection& conn, ipc::Decoder& body) {
  ipc::UnregisterRequest req;
  if (!req.Decode(body)) return EPROTO;
  bool found = false;
  std::erase_if(conn.enablers, [&](const Enabler& en) {
    if (en.addr != req.addr || en.bit != req.bit) return false;
    registry_->Put(en.event);
    quotas_.Release(conn.peer.uid, Resource::kEnablers, 1);
    found = true;
    return true;
  });
  return found ? 0 : ENOENT;
}

int Server::OnDescribeIndex(Connection& conn, ipc::Decoder& body, std::vector<ScopedFd>& fds, uint32_t seq) {
  ipc::DescribeIndexRequest req;
  if (!req.Decode(body)) return EPROTO;
  DataFile* file = FindDataFile(fds);
  if (!file) return EBADF;
  if (req.index >= file->refs.size()) return ENOENT;
  const Event& event = *file->refs[req.index];
  AllowWrites(conn, event);
  SendReplyBody(conn, seq, DescribeEvent(event));
  return 0;
}

int Server::OnClaimDataFile(Connection& conn, std::vector<ScopedFd>& fds) {
  DataFile* file = FindDataFile(fds);
  if (!file) return EBADF;
  for (const Event* e : file->refs) AllowWrites(conn, *e);
  return 0;
}

int Server::OnAddRing(Connection& conn, std::vector<ScopedFd>& fds) {
  if (fds.size() != 1) return EPROTO;
  size_t owned = std::count_if(rings_.begin(), rings_.end(), [&](const RingSource& r) { return r.owner == conn.id; });
  if (owned >= kMaxRingsPerProcess) return EMFILE;
  auto reader = ring::RingReader::Map(fds[0].get(), base::ProcessStartNs(conn.peer.pid));
  if (!reader.ok()) return reader.error();
  // Map checked the size (a sealed memfd's cannot change): charge it.
  struct stat ring_stat;
  if (fstat(fds[0].get(), &ring_stat) < 0) return errno;
  uint64_t bytes = ring_stat.st_size;
  // The largest rings are for threads that outrun the daemon. Every user,
  // the privileged too, gets them only while his rings stay within half his
  // limit: the rest is kept for new threads' first rings, and a thread
  // refused one keeps the ring it has.
  const bool largest =
      bytes - ring::kHeaderBytes >= options_.ring_max_bytes && options_.ring_max_bytes > options_.ring_bytes;
  if (largest &&
      quotas_.Used(conn.peer.uid, Resource::kRingBytes) + bytes > quotas_.Limit(Resource::kRingBytes) / 2) {
    return ENOMEM;
  }
  if (!quotas_.TryCharge(conn.peer.uid, conn.caller.privileged, Resource::kRingBytes, bytes)) {
    return Refuse(conn, Resource::kRingBytes, ENOMEM);
  }
  uint32_t tid = (*reader)->tid();
  // The thread must belong to the peer process; otherwise attribute to it.
  struct stat st;
  if (stat(fmt::format("/proc/{}/task/{}", conn.peer.pid, tid).c_str(), &st) < 0) tid = conn.peer.pid;
  RememberComm(conn.peer.pid, tid);
  UpdateHoldBack();  // a request may just have made an instance hold back
  (*reader)->SetWriterWait(writer_wait_ms_);
  // A thread's new ring takes over from its last one (the thread outgrew
  // it, or its tid was reused): whatever is left there comes first. By the
  // tid the producer wrote, not the one we attribute: in a pid namespace of
  // its own all of a process's threads are attributed to it.
  uint64_t follows = 0;
  for (const RingSource& src : rings_) {
    if (src.owner == conn.id && src.reader->tid() == (*reader)->tid()) follows = src.serial;
  }
  rings_.push_back({std::move(reader).value(), conn.peer.pid, tid, conn.id, conn.peer.uid, bytes, ++rings_added_, follows});
  return 0;
}

int Server::OnInheritEnablers(Connection& conn, ipc::Decoder& body, uint32_t seq) {
  ipc::InheritRequest req;
  if (!req.Decode(body)) return EPROTO;
  ipc::InheritReply reply;
  for (const auto& in : req.enablers) {
    Event* event = registry_->FindById(in.event_id);
    bool valid = (in.size == 4 || in.size == 8) && in.bit < in.size * 8;
    if (!event || !valid || !quotas_.TryCharge(conn.peer.uid, conn.caller.privileged, Resource::kEnablers, 1)) {
      reply.statuses.push_back(ipc::kEnablerDropped);
      continue;
    }
    registry_->Get(event);
    conn.enablers.push_back({event, in.addr, in.bit, in.size});
    reply.statuses.push_back(event->status);
  }
  SendReplyBody(conn, seq, reply);
  return 0;
}

void Server::OnAck(Connection& conn, ipc::Decoder& body) {
  ipc::Ack ack;
  if (!ack.Decode(body) || ack.notice > conn.notices_sent) return;
  conn.notices_acked = std::max(conn.notices_acked, ack.notice);
  ResolveDeferred(false);
}

// The preload's perf_event fds: like the kernel's perf probe, an open fd
// marks the event used by perf (status bit, enable bits) and keeps it from
// being deleted until it is closed. The reply waits for the enable bits.
int Server::OnPerfAttach(Connection& conn, ipc::Decoder& body, bool attach) {
  ipc::PerfAttachRequest req;
  if (!req.Decode(body)) return EPROTO;
  Event* event = registry_->FindById(req.event_id);
  if (!event) return ENOENT;
  if (attach) {
    if (conn.perf_events.size() >= kMaxPerfEventsPerConnection) return EMFILE;
    registry_->Get(event);
    conn.perf_events.push_back(event);
    SetPerfRefs(event, +1);
    return 0;
  }
  auto it = std::find(conn.perf_events.begin(), conn.perf_events.end(), event);
  if (it == conn.perf_events.end()) return ENOENT;
  conn.perf_events.erase(it);
  SetPerfRefs(event, -1);
  registry_->Put(event);
  return 0;
}

void Server::SetPerfRefs(Event* event, int delta) {
  event->perf_refs += delta;
  registry_->SetStatusBits(event, kStatusPerf, event->perf_refs > 0);
}

}  // namespace udiag::service
