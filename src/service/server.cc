// The Server's life: setup, the event loop, request dispatch, and what
// follows registry changes. Transport, requests and draining have files of
// their own (docs/architecture.md).
#include "service/server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/signalfd.h>
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
#include "service/server_epoll.h"

namespace udiag::service {
namespace {

using base::Errno;
using base::ErrorOr;
using base::ScopedFd;

// Drain pacing: while producers are active, poll often enough that about
// kTurnBytes of ring wait per turn (a quarter of the default ring; a
// dozing daemon is poked at an eighth): fewer, larger drains cost less than
// many small ones (each wake-up is a context switch, tens of µs in a VM, and
// draining right behind a producer bounces its cache lines).
// Polls further apart than kMaxPollNs doze: a burst could fill a ring
// meanwhile, so every ring's producer must poke us once an eighth of its
// ring is unread (kConsumerDozes); a slow producer then costs a wake-up
// every kMaxDozeNs, not every millisecond. Back off when they go quiet, and
// sleep (producers wake us) after a stretch of silence.
constexpr uint64_t kMinPollNs = 50'000;
constexpr uint64_t kMaxPollNs = 1'000'000;
constexpr uint64_t kMaxDozeNs = 20'000'000;
constexpr uint64_t kTurnBytes = 1 << 20;
constexpr uint64_t kIdleBeforeSleepNs = 20'000'000;
// Safety net for a wake-up lost to the producer's unfenced check.
constexpr uint64_t kSleepTimeoutNs = 250'000'000;
// How long a request waits for producers to acknowledge enable-bit changes.
constexpr uint64_t kAckTimeoutNs = 1'000'000'000;

// The poll interval at which `bytes` drained over `elapsed_ns` would come to
// kTurnBytes per turn.
uint64_t PollIntervalFor(uint64_t bytes, uint64_t elapsed_ns) {
  if (bytes == 0) return kMinPollNs;
  return std::clamp<uint64_t>(kTurnBytes * elapsed_ns / bytes, kMinPollNs, kMaxDozeNs);
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

Server::Server(const ServerOptions& options) : options_(options), quotas_(options.limits) {}

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
  // A recorder's file past our RLIMIT_FSIZE fails its write (EFBIG), which
  // ends that recording; the signal would end the daemon.
  signal(SIGXFSZ, SIG_IGN);
  signals_.Reset(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  // Given up for a moment when accept() runs out of fds (OnOutOfFds).
  reserve_fd_.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!epoll_ || !wake_ || !signals_ || !reserve_fd_) return errno;

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

// epoll_pwait2 (Linux 5.11) for its ns timeout; epoll_wait, to the ms
// above, on older kernels and under valgrind, which lack it.
int Server::WaitForEvents(epoll_event* events, int max_events, uint64_t timeout_ns) {
  if (have_epoll_pwait2_) {
    timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
    int n = epoll_pwait2(epoll_.get(), events, max_events, &ts, nullptr);
    if (n >= 0 || errno != ENOSYS) return n;
    have_epoll_pwait2_ = false;
  }
  const uint64_t ms = std::min<uint64_t>((timeout_ns + 999'999) / 1'000'000, INT32_MAX);
  return epoll_wait(epoll_.get(), events, max_events, static_cast<int>(ms));
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
    if (uint64_t now = base::MonotonicNs(); listening_paused_until_ > now) {
      timeout = std::min(timeout, listening_paused_until_ - now);
    }
    // A recording's open page is taken one event at a time once due.
    if (uint64_t now = base::MonotonicNs(); open_page_due_ns_ != UINT64_MAX) {
      timeout = std::min(timeout, open_page_due_ns_ > now + kMinPollNs ? open_page_due_ns_ - now : kMinPollNs);
    }
    int n = WaitForEvents(events, 64, timeout);
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
    CloseUnread();

    uint64_t now = base::MonotonicNs();
    ResumeListeningWhenDue(now);
    ExpireRefusals(now);
    if (drained.records > 0) {
      last_activity = now;
      poll_ns = PollIntervalFor(drained.bytes, now - last_turn);
    } else {
      poll_ns = std::min(poll_ns * 2, kMaxDozeNs);
    }
    // While the rings are left to a full recorder (DrainRings), it pokes us
    // once it has room; their producers, whose rings fill meanwhile, would
    // poke us at every page and have us find nothing to do.
    const bool recorder_full = OnlyConsumerIsAFullRecorder();
    if (recorder_full) {
      poll_ns = kMaxDozeNs;
      SetRingsDozing(false);
    } else if (!SetRingsDozing(poll_ns > kMaxPollNs)) {
      poll_ns = std::min(poll_ns, kMaxPollNs);
    }
    if (drained.records == 0 && !recorder_full && now - last_activity > kIdleBeforeSleepNs && deferred_.empty()) {
      SetRingsSleeping(true);
      // Anything committed before the flag was visible is drained now.
      if (DrainRings().records == 0 && RecordStreamsMaySleep()) {
        sleeping = true;
      } else {
        SetRingsSleeping(false);
        last_activity = now;
      }
    }
    last_turn = now;
  }
  return 0;
}

void Server::HandleMessage(Connection& conn, const std::vector<uint8_t>& bytes,
                           std::vector<ScopedFd>& fds) {
  ipc::MessageHeader header;
  ipc::Decoder body({});
  if (!ipc::SplitMessage(bytes, &header, &body)) {
    CloseConnection(conn.id);
    return;
  }
  if (conn.refusal) {  // over the user's connection limit: say so, then hang up
    SendReply(conn, header.seq, conn.refusal);
    CloseConnection(conn.id);
    return;
  }
  using ipc::MsgType;
  if (!conn.greeted && header.type != MsgType::kHello) {
    SendReply(conn, header.seq, EPROTO);
    return;
  }
  // The role said in Hello is checked before any handler runs, so a
  // request of the other role gets nothing but this short refusal.
  bool producer_op = header.type >= MsgType::kOpenDataFile && header.type < MsgType::kTreeRead;
  bool consumer_op = header.type >= MsgType::kTreeRead && header.type < MsgType::kReply;
  if ((producer_op && (conn.role != ipc::Role::kProducer || !conn.caller.producer)) ||
      (consumer_op && conn.role != ipc::Role::kConsumer)) {
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
      if (!req.Decode(body)) {
        err = EPROTO;
        break;
      }
      DrainBeforeRequest(conn);
      err = tree_->Write(req.path, req.text, req.append, conn.caller);
      break;
    }
    case MsgType::kAutoEnable: err = OnAutoEnable(conn, body); break;
    case MsgType::kTreeMkdir: err = OnTreeMkdir(conn, body); break;
    case MsgType::kTreeRmdir: err = OnTreeRmdir(conn, body); break;
    case MsgType::kRecordStream: err = OnRecordStream(conn, body, fds, header.seq); replied = err == 0; break;
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

// An event created by a request counts against its sender's quota.
bool Server::MayCreateEvent() {
  if (!current_request_) return true;
  const Connection& conn = *current_request_;
  if (quotas_.HasRoom(conn.peer.uid, conn.caller.privileged, Resource::kEvents)) return true;
  Refuse(conn, Resource::kEvents, EMFILE);
  return false;
}

void Server::OnEventCreated(Event& event) {
  if (current_request_) {
    quotas_.Charge(current_request_->peer.uid, Resource::kEvents, 1);
    event_creators_[event.id] = current_request_->peer.uid;
  }
  for (auto& [_, conn] : connections_) ApplyAutoEnable(*conn, event);
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
  if (auto creator = event_creators_.find(event.id); creator != event_creators_.end()) {
    quotas_.Release(creator->second, Resource::kEvents, 1);
    event_creators_.erase(creator);
  }
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
