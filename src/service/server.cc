#include "service/server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fnmatch.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "base/daemon_dir.h"
#include "base/errno_name.h"
#include "base/tsc.h"
#include "schema/event_description.h"
#include "service/kernel_event_ids.h"
#include "service/trace_text.h"
#include "udiag/udiag.h"

namespace udiag::service {
namespace {

using base::Errno;
using base::ErrorOr;
using base::ScopedFd;

// Drain pacing: while producers are active, poll often enough that about
// kTurnBytes of ring wait per turn (a sixteenth of the default ring): fewer,
// larger drains cost less than many small ones (each wake-up is a context
// switch, and draining right behind a producer bounces its cache lines).
// Back off when they go quiet, and sleep (producers wake us) after a
// stretch of silence.
constexpr uint64_t kMinPollNs = 50'000;
constexpr uint64_t kMaxPollNs = 1'000'000;
constexpr uint64_t kTurnBytes = 256 << 10;
constexpr uint64_t kIdleBeforeSleepNs = 20'000'000;
// Safety net for a wake-up lost to the producer's unfenced check.
constexpr uint64_t kSleepTimeoutNs = 250'000'000;
// How long a request waits for producers to acknowledge enable-bit changes.
constexpr uint64_t kAckTimeoutNs = 1'000'000'000;
constexpr size_t kMaxOutboxBytes = 64 << 20;
constexpr size_t kMaxRingsPerProcess = 4096;
constexpr size_t kChunkBytes = base::kMaxMessageBytes - sizeof(ipc::MessageHeader) - 64;
// perf_event fds one process may hold open on udiag's events (the kernel's
// limit is the fd limit; this bounds what a hostile producer makes us keep).
constexpr size_t kMaxPerfEventsPerConnection = 65536;

// Drain rounds: records per ring, bytes held, rounds per loop turn.
constexpr size_t kRoundRecords = 4096;
constexpr size_t kRoundBytes = 4 << 20;
constexpr int kMaxRounds = 64;
// The largest record a ring can hand over, with its common header: what a
// holding-back instance must have room for, per record drained.
constexpr size_t kMaxRecordBytes = schema::kCommonHeaderSize + ring::kMaxPayload;

// Dispatch tags for epoll: the low bits say which kind of fd it is.
enum Tag : uint64_t { kListener = 1, kWake, kSignals, kConnection, kDataFile, kRecordStream };
uint64_t Pack(Tag tag, uint64_t value) { return value << 8 | tag; }

// The poll interval at which `bytes` drained over `elapsed_ns` would come to
// kTurnBytes per turn.
uint64_t PollIntervalFor(uint64_t bytes, uint64_t elapsed_ns) {
  if (bytes == 0) return kMinPollNs;
  return std::clamp<uint64_t>(kTurnBytes * elapsed_ns / bytes, kMinPollNs, kMaxPollNs);
}

int AddToEpoll(int epoll, int fd, uint32_t events, uint64_t data) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = data;
  return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &ev) < 0 ? errno : 0;
}

ino_t InodeOf(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

// A per-user daemon's directory must be ours and private; a system one ours
// and not writable by others.
int PrepareDirectory(const std::string& dir, bool system) {
  if (mkdir(dir.c_str(), system ? 0755 : 0700) < 0 && errno != EEXIST) return errno;
  struct stat st;
  if (lstat(dir.c_str(), &st) < 0) return errno;
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) return EPERM;
  if (!system && (st.st_mode & 077) && chmod(dir.c_str(), 0700) < 0) return errno;
  if (system && (st.st_mode & 022) && chmod(dir.c_str(), 0755) < 0) return errno;
  return 0;
}

}  // namespace

Server::Server(const ServerOptions& options) : options_(options) {}

Server::~Server() {
  if (records_rejected_) {
    fmt::print(stderr, "udiagd: rejected {} malformed or unauthorised records from producer rings\n",
               records_rejected_);
  }
  if (listener_) unlink(base::ControlSocketPath(options_.dir).c_str());
  if (lock_) unlink(base::LockFilePath(options_.dir).c_str());
}

ErrorOr<std::unique_ptr<Server>> Server::Create(const ServerOptions& options) {
  std::unique_ptr<Server> server(new Server(options));
  if (int err = server->Init()) return Errno{err};
  return server;
}

int Server::Init() {
  bool system = options_.policy.owner == 0;
  if (int err = PrepareDirectory(options_.dir, system)) {
    fmt::print(stderr, "udiagd: cannot use directory {}: {}\n", options_.dir, base::DescribeErrno(err));
    return err;
  }
  std::string lock_path = base::LockFilePath(options_.dir);
  lock_.Reset(open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!lock_) return errno;
  if (flock(lock_.get(), LOCK_EX | LOCK_NB) < 0) {
    char pid[32] = {};
    ssize_t n = pread(lock_.get(), pid, sizeof(pid) - 1, 0);
    std::string who = n > 0 ? std::string(pid, strcspn(pid, "\n")) : "?";
    fmt::print(stderr, "udiagd: another udiagd (pid {}) is already running on {}\n", who, options_.dir);
    lock_.Release();  // not ours: do not unlink it on the way out
    return EADDRINUSE;
  }
  std::string pid = fmt::format("{}\n", getpid());
  if (ftruncate(lock_.get(), 0) < 0 || pwrite(lock_.get(), pid.data(), pid.size(), 0) < 0) return errno;

  auto page = StatusPage::Create(EventRegistry::kFirstId, EventRegistry::kDefaultMaxEvents);
  if (!page.ok()) return page.error();
  status_page_ = std::make_unique<StatusPage>(std::move(page).value());
  registry_ = std::make_unique<EventRegistry>(status_page_.get(), this);
  if (std::string tracefs = RealTracefsRoot(); !tracefs.empty()) registry_->ReserveIds(TracepointIdsUnder(tracefs));
  instances_ = std::make_unique<InstanceSet>(registry_.get());
  tree_ = std::make_unique<TracefsTree>(registry_.get(), instances_.get(),
                                        [this](uint32_t tid) { return CommOf(tid); });

  clock_domain_ = base::InvariantTscAvailable() ? ring::ClockDomain::kTsc : ring::ClockDomain::kMonotonic;
  epoll_.Reset(epoll_create1(EPOLL_CLOEXEC));
  wake_.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  signals_.Reset(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!epoll_ || !wake_ || !signals_) return errno;

  std::string socket_path = base::ControlSocketPath(options_.dir);
  auto listener = base::ListenSeqpacket(socket_path);
  if (!listener.ok()) {
    fmt::print(stderr, "udiagd: cannot listen on {}: {}\n", socket_path, base::DescribeErrno(listener.error()));
    return listener.error();
  }
  listener_ = std::move(listener).value();
  // Access is decided per peer from its credentials; the socket itself is
  // open to everyone who can reach the directory.
  chmod(socket_path.c_str(), system ? 0666 : 0600);

  if (int err = AddToEpoll(epoll_.get(), listener_.get(), EPOLLIN, Pack(kListener, 0))) return err;
  if (int err = AddToEpoll(epoll_.get(), wake_.get(), EPOLLIN, Pack(kWake, 0))) return err;
  if (int err = AddToEpoll(epoll_.get(), signals_.get(), EPOLLIN, Pack(kSignals, 0))) return err;
  return 0;
}

int Server::Run() {
  uint64_t poll_ns = kMinPollNs;
  uint64_t last_activity = base::MonotonicNs();
  uint64_t last_turn = last_activity;
  bool sleeping = false;
  epoll_event events[64];
  while (running_) {
    uint64_t timeout = sleeping ? kSleepTimeoutNs : poll_ns;
    if (!deferred_.empty()) timeout = std::min<uint64_t>(timeout, kMinPollNs * 20);
    timespec ts{static_cast<time_t>(timeout / 1'000'000'000), static_cast<long>(timeout % 1'000'000'000)};
    int n = epoll_pwait2(epoll_.get(), events, 64, &ts, nullptr);
    if (n < 0 && errno != EINTR) return 1;
    if (sleeping) {
      SetRingsSleeping(false);
      sleeping = false;
    }
    for (int i = 0; i < n; ++i) {
      uint64_t data = events[i].data.u64;
      uint64_t value = data >> 8;
      switch (static_cast<Tag>(data & 0xff)) {
        case kListener:
          Accept();
          break;
        case kWake: {
          uint64_t count;
          [[maybe_unused]] ssize_t r = read(wake_.get(), &count, sizeof(count));
          break;
        }
        case kSignals:
          running_ = false;
          break;
        case kConnection: {
          auto it = connections_.find(value);
          if (it == connections_.end()) break;
          if (events[i].events & EPOLLOUT) FlushOutbox(*it->second);  // PumpPipes refills it below
          if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) HandleReadable(*it->second);
          break;
        }
        case kDataFile:
          HandleDataFileHangup(static_cast<int>(value));
          break;
        case kRecordStream: {
          auto it = connections_.find(value);
          if (it == connections_.end() || !it->second->record_stream) break;
          if ((events[i].events & (EPOLLHUP | EPOLLERR)) || !it->second->record_stream->TakeWakeups()) {
            CloseConnection(value);  // the recorder went away
          } else {
            it->second->stream_waits = false;  // it freed room: PumpRecordStreams refills the ring below
          }
          break;
        }
      }
    }
    tsc_clock_.Sample();
    DrainTotals drained = DrainRings();
    registry_->CollectGarbage();
    PumpPipes();
    PumpRecordStreams();
    ResolveDeferred(false);

    uint64_t now = base::MonotonicNs();
    if (drained.records > 0) {
      last_activity = now;
      poll_ns = PollIntervalFor(drained.bytes, now - last_turn);
    } else {
      poll_ns = std::min(poll_ns * 2, kMaxPollNs);
      if (now - last_activity > kIdleBeforeSleepNs && deferred_.empty()) {
        SetRingsSleeping(true);
        // Anything committed before the flag was visible is drained now.
        if (DrainRings().records == 0) {
          sleeping = true;
        } else {
          SetRingsSleeping(false);
          last_activity = now;
        }
      }
    }
    last_turn = now;
  }
  return 0;
}

void Server::SetRingsSleeping(bool sleeping) {
  for (auto& r : rings_) r.reader->SetConsumerSleeping(sleeping);
}

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

void Server::HandleMessage(Connection& conn, const std::vector<uint8_t>& bytes,
                           std::vector<ScopedFd>& fds) {
  ipc::MessageHeader header;
  ipc::Decoder body({});
  if (!ipc::SplitMessage(bytes, &header, &body)) {
    CloseConnection(conn.id);
    return;
  }
  using ipc::MsgType;
  if (!conn.greeted && header.type != MsgType::kHello) {
    SendReply(conn, header.seq, EPROTO);
    return;
  }
  bool producer_op = header.type >= MsgType::kOpenDataFile && header.type < MsgType::kTreeRead;
  if (producer_op && (conn.role != ipc::Role::kProducer || !conn.caller.producer)) {
    SendReply(conn, header.seq, EACCES);
    return;
  }
  current_request_ = &conn;
  current_awaiting_.clear();
  int err = 0;
  bool replied = false;  // handlers that stream or reply with a body do it themselves
  switch (header.type) {
    case MsgType::kHello: err = OnHello(conn, body, header.seq); replied = err == 0; break;
    case MsgType::kOpenDataFile: err = OnOpenDataFile(conn, header.seq); replied = err == 0; break;
    case MsgType::kRegister: err = OnRegister(conn, body, fds, header.seq); replied = err == 0; break;
    case MsgType::kUnregister: err = OnUnregister(conn, body); break;
    case MsgType::kDelete: {
      ipc::NameRequest req;
      err = !req.Decode(body) ? EPROTO
            : req.name.size() >= schema::kMaxCommandBytes ? EINVAL
            : registry_->DeleteByName(req.name, conn.caller.privileged);
      break;
    }
    case MsgType::kDescribeIndex: err = OnDescribeIndex(conn, body, fds, header.seq); replied = err == 0; break;
    case MsgType::kClaimDataFile: err = OnClaimDataFile(conn, fds); break;
    case MsgType::kAddRing: err = OnAddRing(conn, fds); break;
    case MsgType::kInheritEnablers: err = OnInheritEnablers(conn, body, header.seq); replied = err == 0; break;
    case MsgType::kAck: OnAck(conn, body); replied = true; break;
    case MsgType::kPerfAttach: err = OnPerfAttach(conn, body, true); break;
    case MsgType::kPerfDetach: err = OnPerfAttach(conn, body, false); break;
    case MsgType::kTreeRead: err = OnTreeRead(conn, body, header.seq); replied = err == 0; break;
    case MsgType::kTreeList: err = OnTreeList(conn, body, header.seq); replied = err == 0; break;
    case MsgType::kTreePipe: err = OnTreePipe(conn, body, header.seq); replied = err == 0; break;
    case MsgType::kTreeWrite: {
      ipc::TreeWriteRequest req;
      err = req.Decode(body) ? tree_->Write(req.path, req.text, req.append, conn.caller) : EPROTO;
      break;
    }
    case MsgType::kAutoEnable: err = OnAutoEnable(conn, body); break;
    case MsgType::kTreeMkdir: err = OnTreeMkdir(conn, body); break;
    case MsgType::kTreeRmdir: err = OnTreeRmdir(conn, body); break;
    case MsgType::kRecordStream: err = OnRecordStream(conn, body, header.seq); replied = err == 0; break;
    default: err = EOPNOTSUPP; break;
  }
  current_request_ = nullptr;
  if (replied) return;
  if (err == 0 && !current_awaiting_.empty()) {
    deferred_.push_back({conn.id, header.seq, std::move(current_awaiting_),
                         base::MonotonicNs() + kAckTimeoutNs});
    current_awaiting_.clear();
    return;
  }
  SendReply(conn, header.seq, err);
}

int Server::OnHello(Connection& conn, ipc::Decoder& body, uint32_t seq) {
  ipc::Hello hello;
  if (!hello.Decode(body) || conn.greeted) return EPROTO;
  if (hello.version != ipc::kProtocolVersion) return EPROTONOSUPPORT;
  if (hello.role != ipc::Role::kProducer && hello.role != ipc::Role::kConsumer) return EINVAL;
  if (hello.role == ipc::Role::kProducer && !conn.caller.producer) return EACCES;
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
  ipc::Encoder e = ipc::StartMessage(ipc::MsgType::kReply, seq);
  reply.Encode(e);
  int fds[] = {status_page_->fd(), wake_.get()};
  if (int err = base::SendMessage(conn.fd.get(), e.bytes(), fds)) return err;
  return 0;
}

int Server::OnOpenDataFile(Connection& conn, uint32_t seq) {
  auto file = std::make_unique<DataFile>();
  ScopedFd producer_end;
  if (int err = base::SeqpacketPair(&file->daemon_end, &producer_end)) return err;
  file->producer_inode = InodeOf(producer_end.get());
  shutdown(file->daemon_end.get(), SHUT_WR);
  int fd = file->daemon_end.get();
  if (int err = AddToEpoll(epoll_.get(), fd, EPOLLIN | EPOLLRDHUP, Pack(kDataFile, fd))) return err;
  data_files_[fd] = std::move(file);
  ipc::Encoder e = ipc::StartMessage(ipc::MsgType::kReply, seq);
  int fds[] = {producer_end.get()};
  if (int err = base::SendMessage(conn.fd.get(), e.bytes(), fds)) {
    HandleDataFileHangup(fd);
    return err;
  }
  return 0;
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

  auto found = registry_->FindOrCreate(req.command, req.flags & USER_EVENT_REG_MULTI_FORMAT, persist);
  if (!found.ok()) return found.error();
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
  auto reader = ring::RingReader::Map(fds[0].get());
  if (!reader.ok()) return reader.error();
  uint32_t tid = (*reader)->tid();
  // The thread must belong to the peer process; otherwise attribute to it.
  struct stat st;
  if (stat(fmt::format("/proc/{}/task/{}", conn.peer.pid, tid).c_str(), &st) < 0) tid = conn.peer.pid;
  RememberComm(conn.peer.pid, tid);
  UpdateHoldBack();  // a request may just have made an instance hold back
  (*reader)->SetWriterWait(writer_wait_ms_);
  rings_.push_back({std::move(reader).value(), conn.peer.pid, tid, conn.id});
  return 0;
}

int Server::OnInheritEnablers(Connection& conn, ipc::Decoder& body, uint32_t seq) {
  ipc::InheritRequest req;
  if (!req.Decode(body)) return EPROTO;
  ipc::InheritReply reply;
  for (const auto& in : req.enablers) {
    Event* event = registry_->FindById(in.event_id);
    bool valid = (in.size == 4 || in.size == 8) && in.bit < in.size * 8;
    if (!event || !valid) {
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

// Read-after-write, as with the kernel's synchronous writes: a read that
// starts after a producer's write returned sees its event, so the rings are
// drained first (records already published are all there is to take).
// Not for a record stream's own connection: the drain may close broken
// streams' connections, and `conn` must outlive the request.
void Server::DrainBeforeRead(const Connection& conn) {
  if (conn.record_stream) return;
  tsc_clock_.Sample();
  DrainRings();
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

int Server::OnTreeRead(Connection& conn, ipc::Decoder& body, uint32_t seq) {
  ipc::PathRequest req;
  if (!req.Decode(body)) return EPROTO;
  DrainBeforeRead(conn);
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
  DrainBeforeRead(conn);
  if (conn.pipe_instance) conn.pipe_instance->RemoveReader();
  conn.pipe_instance = *instance;
  conn.pipe_instance->AddReader();
  conn.pipe_seq = seq;
  PumpPipes();
  return 0;
}

int Server::OnAutoEnable(Connection& conn, ipc::Decoder& body) {
  ipc::AutoEnableRequest req;
  if (!req.Decode(body)) return EPROTO;
  if (!conn.caller.consumer) return EACCES;
  if (!instances_->Find(req.instance)) return ENOENT;
  conn.auto_rules.push_back({req.glob, req.instance, req.filter});
  for (Event* e : registry_->Events()) ApplyAutoEnable(conn, *e);
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

int Server::OnRecordStream(Connection& conn, ipc::Decoder& body, uint32_t seq) {
  ipc::RecordStreamRequest req;
  if (!req.Decode(body)) return EPROTO;
  if (!conn.caller.consumer) return EACCES;
  if (conn.record_stream) return EBUSY;  // one stream per connection
  if (!conn.outbox.empty()) return EAGAIN;  // the reply (with its fd) must not overtake queued messages
  Instance* instance = instances_->Find(req.instance);
  if (!instance) return ENOENT;
  // Records go through a shared ring; the socket carries wake-ups both ways.
  auto ring = ipc::StreamRing::Create();
  if (!ring.ok()) return ring.error();
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) < 0) return errno;
  ScopedFd ours(pair[0]), theirs(pair[1]);
  if (int err = AddToEpoll(epoll_.get(), ours.get(), EPOLLIN, Pack(kRecordStream, conn.id))) return err;
  ipc::Encoder reply = ipc::StartMessage(ipc::MsgType::kReply, seq);
  int fds[] = {theirs.get(), (*ring)->fd()};
  if (int err = base::SendMessage(conn.fd.get(), reply.bytes(), fds)) {
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, ours.get(), nullptr);
    return err;
  }
  conn.record_stream = std::make_unique<RecordStreamSender>(std::move(ours), std::move(ring).value(), instance,
                                                            registry_.get(),
                                                            [this](uint32_t tid) { return TaskComm(tid); }, req.pages);
  instance->AddRecordStream();
  instance->buffer().Preallocate();
  return 0;
}

void Server::OnEventCreated(Event& event) {
  for (auto& [_, conn] : connections_) ApplyAutoEnable(*conn, event);
}

// Holds `event` enabled in an instance for `conn` if one of its globs for that
// instance matches. The event is enabled by the first hold and disabled when
// the last goes (ReleaseAutoEnables), unless someone else had enabled it.
void Server::ApplyAutoEnable(Connection& conn, Event& event) {
  std::string full = fmt::format("{}:{}", event.system(), event.tp_name);
  for (const AutoRule& rule : conn.auto_rules) {
    AutoKey key{rule.instance, event.id};
    if (conn.auto_enabled.contains(key)) continue;
    bool has_system = rule.glob.find(':') != std::string::npos;
    if (fnmatch(rule.glob.c_str(), has_system ? full.c_str() : event.tp_name.c_str(), 0) != 0) continue;
    Instance* instance = instances_->Find(rule.instance);
    if (!instance) continue;
    // A filter that does not parse for the event keeps it off (the error is in its filter file and error_log).
    if (!rule.filter.empty() && instance->filters().Write(event, rule.filter, &instance->error_log())) continue;
    conn.auto_enabled.insert(key);
    if (auto_holds_[key]++ == 0 && !instance->IsEnabled(event.id)) {
      auto_turned_on_.insert(key);
      instances_->SetEnabled(*instance, &event, true);
    }
  }
}

void Server::ReleaseAutoEnables(Connection& conn) {
  for (const AutoKey& key : conn.auto_enabled) {
    if (--auto_holds_[key] > 0) continue;
    auto_holds_.erase(key);
    Event* e = registry_->FindById(key.second);
    Instance* instance = instances_->Find(key.first);
    if (auto_turned_on_.erase(key) && e && instance) instances_->SetEnabled(*instance, e, false);
  }
  conn.auto_enabled.clear();
}

void Server::ForgetAutoEnables(const std::string& name) {
  auto of_instance = [&](const AutoKey& key) { return key.first == name; };
  std::erase_if(auto_holds_, [&](const auto& entry) { return of_instance(entry.first); });
  std::erase_if(auto_turned_on_, of_instance);
  for (auto& [_, conn] : connections_) {
    std::erase_if(conn->auto_enabled, of_instance);
    std::erase_if(conn->auto_rules, [&](const AutoRule& rule) { return rule.instance == name; });
  }
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

void Server::EndRecordStream(Connection& conn) {
  conn.record_stream->instance()->RemoveRecordStream();
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, conn.record_stream->fd(), nullptr);
  conn.record_stream.reset();
  conn.stream_waits = false;
}

void Server::OnEventStatusChanged(Event& event) {
  // Rings wait for room before the producers hear their events are on.
  UpdateHoldBack();
  for (auto& [id, conn] : connections_) {
    bool has = std::any_of(conn->enablers.begin(), conn->enablers.end(),
                           [&](const Enabler& en) { return en.event == &event; });
    if (!has) continue;
    ipc::SetStatus notice{++conn->notices_sent, event.id, event.status};
    ipc::Encoder e = ipc::StartMessage(ipc::MsgType::kSetStatus, 0);
    notice.Encode(e);
    Send(*conn, std::move(e.bytes()));
    if (current_request_) current_awaiting_[id] = notice.notice;
  }
}

void Server::OnEventDestroyed(const Event& event) {
  auto of_event = [&](const AutoKey& key) { return key.second == event.id; };
  for (auto& [_, conn] : connections_) {
    if (!conn->writable.empty()) conn->writable[event.id - EventRegistry::kFirstId] = false;
    std::erase_if(conn->auto_enabled, of_event);
    if (conn->record_stream) conn->record_stream->ForgetType(event.id);
  }
  std::erase_if(auto_holds_, [&](const auto& entry) { return of_event(entry.first); });
  std::erase_if(auto_turned_on_, of_event);
}

void Server::ResolveDeferred(bool force_expired) {
  uint64_t now = base::MonotonicNs();
  std::erase_if(deferred_, [&](DeferredReply& d) {
    std::erase_if(d.awaiting, [&](const auto& entry) {
      auto it = connections_.find(entry.first);
      return it == connections_.end() || it->second->notices_acked >= entry.second;
    });
    if (!d.awaiting.empty() && now < d.deadline_ns && !force_expired) return false;
    if (auto it = connections_.find(d.conn_id); it != connections_.end()) SendReply(*it->second, d.seq, 0);
    return true;
  });
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
  data_files_.erase(it);
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

// Drains every ring in rounds of at most kRoundRecords records per ring. Each
// round publishes the rings' tails, so a fast producer gets its space back
// while we work, and bounds the memory a round holds; the rounds of one pass
// stop when the rings are empty or kMaxRounds were done.
Server::DrainTotals Server::DrainRings() {
  DrainTotals total;
  // A single ring has no runs to merge with: its records go to the instances
  // as they are drained, through the same few bytes of arena.
  const bool deliver_now = rings_.size() == 1;
  for (int round = 0; round < kMaxRounds; ++round) {
    drained_.clear();
    arena_.Clear();
    runs_.clear();
    // Each round: the last one's readers may have freed room, or gone.
    UpdateHoldBack();
    bool more = false;
    size_t delivered_now = 0;
    // Each round starts at the next ring, and a holding-back instance's room
    // is shared out between the rings: otherwise the first rings would take
    // all of it and the last ones' writers would wait in vain.
    const size_t ring_count = rings_.size();
    const size_t first = ring_count ? first_ring_++ % ring_count : 0;
    const size_t share = holding_back_.empty() ? kRoundRecords : std::max<size_t>(1, RecordsThatFit() / std::max<size_t>(1, ring_count));
    for (size_t k = 0; k < ring_count; ++k) {
      RingSource& src = rings_[(first + k) % ring_count];
      // A holding-back instance that is full leaves the rest in the rings.
      const size_t max_records = std::min(share, RecordsThatFit());
      if (max_records == 0) break;
      size_t begin = drained_.size();
      uint64_t position = src.reader->position();
      if (DrainRing(src, max_records, deliver_now ? &delivered_now : nullptr) == max_records) more = true;
      total.bytes += src.reader->position() - position;
      if (drained_.size() > begin) runs_.push_back({begin, drained_.size()});
      if (arena_.size() > kRoundBytes) {
        more = true;
        break;
      }
    }
    DeliverInTimeOrder();
    // Readers take their share between rounds, so a burst longer than an
    // instance buffer still reaches a reader that keeps up.
    PumpRecordStreams();
    total.records += drained_.size() + delivered_now;
    if (!more) break;
  }
  // Rings of exited threads and processes go once they are empty.
  std::erase_if(rings_, [&](const RingSource& src) {
    bool owner_gone = !connections_.contains(src.owner);
    return src.reader->broken() || ((src.reader->closed() || owner_gone) && src.reader->empty());
  });
  return total;
}

// Which instances hold their events back (blocking_timeout_ms), and how
// long the producers' rings let a writer wait for room: the longest of
// their timeouts, or 0 when none holds back.
void Server::UpdateHoldBack() {
  const uint64_t now = base::MonotonicNs();
  holding_back_.clear();
  uint32_t wait_ms = 0;
  auto consider = [&](Instance& instance) {
    if (!instance.HoldsBack(now, kMaxRecordBytes)) return;
    holding_back_.push_back(&instance);
    wait_ms = std::max(wait_ms, instance.blocking_timeout_ms());
  };
  consider(instances_->top());
  for (auto& [_, instance] : instances_->named()) consider(*instance);
  if (wait_ms != writer_wait_ms_) {
    writer_wait_ms_ = wait_ms;
    for (RingSource& src : rings_) src.reader->SetWriterWait(wait_ms);
  }
}

// Records this round may still take from a ring: kRoundRecords, or fewer
// when a holding-back instance has room for fewer (counting the drained
// records not delivered yet), so that none of them is dropped there.
size_t Server::RecordsThatFit() const {
  size_t room = kRoundRecords + drained_.size();
  for (const Instance* instance : holding_back_) room = std::min(room, instance->buffer().RoomFor(kMaxRecordBytes));
  return room > drained_.size() ? room - drained_.size() : 0;
}

// Copies up to max_records of one ring's next records into the arena, each
// with the common header the kernel would put in front, after checking them
// again: the producer may have written anything. With `delivered_now`, each
// record is delivered at once and counted there instead. Returns the records
// read (kept or rejected).
size_t Server::DrainRing(RingSource& src, size_t max_records, size_t* delivered_now) {
  if (uint64_t lost = src.reader->TakeLost()) instances_->NoteLost(lost);
  auto conn = connections_.find(src.owner);
  // A dead producer's rings may still hold its events: they were checked
  // when it registered them, and ids are not reused soon.
  const std::vector<bool>* writable = conn == connections_.end() ? nullptr : &conn->second->writable;
  bool tsc = src.reader->clock() == ring::ClockDomain::kTsc;
  // Nothing drained now was stamped later than now: a hostile producer's
  // far-future stamps are clamped before they reach the shared clock.
  uint64_t latest = tsc ? __rdtsc() : base::MonotonicNs();
  // A thread mostly writes one event after another: look the type up when it
  // changes (nothing here changes events or permissions).
  uint32_t last_type = UINT32_MAX;
  const Event* last_allowed = nullptr;  // the event of last_type if this producer may write it
  return src.reader->DrainHeads(
      [&](const ring::RecordHead& rec, const ring::PayloadSource& payload) {
        if (rec.type != last_type) {
          const Event* found = registry_->FindById(rec.type);
          bool allowed = found && (!writable || (*writable)[rec.type - EventRegistry::kFirstId]);
          last_type = rec.type;
          last_allowed = allowed ? found : nullptr;
        }
        const Event* event = last_allowed;
        if (!event || rec.payload_size < event->desc.min_size) {
          ++records_rejected_;
          return;
        }
        size_t offset = arena_.size();
        uint32_t record_size = schema::kCommonHeaderSize + rec.payload_size;
        uint8_t* r = arena_.Extend(record_size);
        uint16_t type = rec.type;
        uint32_t pid = src.tid;
        std::memcpy(r, &type, 2);
        r[2] = 0;  // flags
        r[3] = 0;  // preempt count
        std::memcpy(r + 4, &pid, 4);
        payload.CopyTo(r + schema::kCommonHeaderSize);
        if (!schema::LocsValid(event->locs.data(), event->locs.size(), r, record_size)) {
          arena_.Truncate(offset);
          ++records_rejected_;
          return;
        }
        uint64_t stamp = std::min(rec.timestamp, latest);
        uint64_t ts = tsc ? tsc_clock_.ToMonotonic(stamp) : stamp;
        EntryMeta meta{ts, static_cast<uint32_t>(src.pid), src.tid, rec.cpu};
        if (delivered_now) {
          instances_->Deliver(*event, meta, {r, record_size});
          arena_.Truncate(offset);
          ++*delivered_now;
        } else {
          drained_.push_back({event, meta, offset, record_size});
        }
      },
      max_records);
}

// Each ring's run is in time order already (one thread, one clock), so the
// runs are merged rather than sorted; one run is delivered as it is.
void Server::DeliverInTimeOrder() {
  auto deliver = [&](const DrainedRecord& d) {
    instances_->Deliver(*d.event, d.meta, std::span<const uint8_t>(arena_.data() + d.offset, d.size));
  };
  if (runs_.size() == 1) {
    for (const DrainedRecord& d : drained_) deliver(d);
    return;
  }
  auto later = [&](const RingRun& a, const RingRun& b) {
    return drained_[a.begin].meta.timestamp > drained_[b.begin].meta.timestamp;
  };
  std::make_heap(runs_.begin(), runs_.end(), later);
  while (!runs_.empty()) {
    std::pop_heap(runs_.begin(), runs_.end(), later);
    RingRun& run = runs_.back();
    deliver(drained_[run.begin++]);
    if (run.begin == run.end) {
      runs_.pop_back();
    } else {
      std::push_heap(runs_.begin(), runs_.end(), later);
    }
  }
}

// Sends trace_pipe readers what their instance buffer holds, until a
// reader's socket is full; EPOLLOUT then flushes it and we come back here.
void Server::PumpPipes() {
  std::vector<uint8_t> storage;
  for (auto& [_, conn] : connections_) {
    if (!conn->pipe_instance) continue;
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

void Server::RememberComm(pid_t pid, uint32_t tid) {
  std::ifstream in(fmt::format("/proc/{}/task/{}/comm", pid, tid));
  std::string comm;
  if (std::getline(in, comm)) comms_[tid] = comm;
  if (comms_.size() > 65536) comms_.clear();  // bounded, like saved_cmdlines
}

std::string Server::TaskComm(uint32_t tid) const {
  auto it = comms_.find(tid);
  return it == comms_.end() ? std::string() : it->second;
}

std::string Server::CommOf(uint32_t tid) const {
  auto it = comms_.find(tid);
  return it == comms_.end() ? "<...>" : it->second;
}

}  // namespace udiag::service
