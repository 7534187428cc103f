#include "producer/client.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include "base/client_timeout.h"
#include "base/daemon_dir.h"
#include "base/unix_socket.h"
#include "producer/data_files.h"
#include "producer/legacy_abi.h"
#include "producer/user_memory.h"
#include "ring/ring_layout.h"

namespace udiag::producer {

FastState g_fast;
std::atomic<const ipc::ProducerPolicy*> g_policy{nullptr};
std::atomic<uint64_t> g_lost_while_disconnected{0};

namespace {

std::mutex g_client_mu;  // creation of the singleton
Client* g_client = nullptr;

int ParseReply(const std::vector<uint8_t>& bytes, std::vector<base::ScopedFd>& fds,
               ipc::MessageHeader* header, Reply* reply) {
  ipc::Decoder body({});
  if (!ipc::SplitMessage(bytes, header, &body)) return EPROTO;
  if (reply) {
    reply->error = header->error;
    auto rest = body.Rest();
    reply->body.assign(rest.begin(), rest.end());
    reply->fds = std::move(fds);
  }
  return 0;
}

// Maps zeros over the status page: with the daemon gone nothing is traced,
// and writers see that without any extra check on their path.
void ZeroStatusPage() {
  const uint8_t* page = g_fast.status_page.load();
  size_t bytes = g_fast.status_page_bytes.load();
  if (g_policy.load()) bytes = ipc::StatusMemfdBytes(bytes);
  if (page && bytes) {
    mmap(const_cast<uint8_t*>(page), bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  }
}

}  // namespace

void WriteEnableBit(const LocalEnabler& en, bool on) {
  // The word may have been unmapped since it was registered: skip it then,
  // as the kernel skips a write that faults.
  uint8_t probe;
  if (CopyFromUser(&probe, en.addr, 1)) return;
  if (en.size == 8) {
    auto* word = reinterpret_cast<uint64_t*>(en.addr);
    uint64_t mask = uint64_t{1} << en.bit;
    on ? __atomic_fetch_or(word, mask, __ATOMIC_SEQ_CST) : __atomic_fetch_and(word, ~mask, __ATOMIC_SEQ_CST);
  } else {
    auto* word = reinterpret_cast<uint32_t*>(en.addr);
    uint32_t mask = uint32_t{1} << en.bit;
    on ? __atomic_fetch_or(word, mask, __ATOMIC_SEQ_CST) : __atomic_fetch_and(word, ~mask, __ATOMIC_SEQ_CST);
  }
}

Client* Client::Get() {
  std::lock_guard lock(g_client_mu);
  // Once connected, the client stays: if the daemon goes away its agent
  // reconnects, and calls fail with ENOTCONN meanwhile.
  if (g_client) return g_client;
  auto* client = new Client;
  if (int err = client->Connect(0)) {
    delete client;
    errno = err;
    return nullptr;
  }
  pthread_atfork(&Client::AtForkPrepare, &Client::AtForkParent, &Client::AtForkChild);
  g_client = client;
  g_fast.connected.store(1);
  client->StartAgent(true);
  return client;
}

int Client::Connect(int forked_from) {
  // Bounded: every blocking send and receive on it times out (client_timeout.h).
  auto fd = base::ConnectSeqpacket(base::ControlSocketPath(base::ResolveDaemonDir("")), base::ClientTimeoutMs());
  if (!fd.ok()) return fd.error() == ECONNREFUSED ? ENOENT : fd.error();
  conn_ = std::move(fd).value();
  ipc::Encoder hello;
  ipc::Hello{ipc::kProtocolVersion, ipc::Role::kProducer, forked_from, ring::kRingVersion}.Encode(hello);
  Reply reply;
  if (int err = CallDirect(ipc::MsgType::kHello, &hello, {}, &reply)) return err;
  if (reply.error) return reply.error;
  ipc::Decoder d(reply.body);
  ipc::HelloReply info;
  if (!info.Decode(d) || reply.fds.size() != 2) return EPROTO;
  // The policy words follow the status bytes in a memfd that has them (one
  // that does not would fault on reading them).
  struct stat memfd;
  const bool with_policy = fstat(reply.fds[0].get(), &memfd) == 0 &&
                           static_cast<uint64_t>(memfd.st_size) >= ipc::StatusMemfdBytes(info.status_page_bytes);
  const size_t map_bytes = with_policy ? ipc::StatusMemfdBytes(info.status_page_bytes) : info.status_page_bytes;
  void* page = mmap(nullptr, map_bytes, PROT_READ, MAP_SHARED, reply.fds[0].get(), 0);
  if (page == MAP_FAILED) return errno;
  // A forked child talks to the same daemon: its inherited data files stay
  // valid. A new daemon's ids mean nothing to the old files: they go stale
  // before its status page is published (the write path checks in that order).
  if (forked_from == 0) g_fast.epoch.fetch_add(1);
  // The old page (zeros since the daemon went away) stays mapped: writers
  // may still be reading it.
  g_policy.store(with_policy ? reinterpret_cast<const ipc::ProducerPolicy*>(static_cast<const uint8_t*>(page) +
                                                                            ipc::ProducerPolicyOffset(info.status_page_bytes))
                            : nullptr);
  g_fast.status_page.store(static_cast<const uint8_t*>(page));
  g_fast.first_event_id.store(info.first_event_id);
  g_fast.status_page_bytes.store(info.status_page_bytes);
  g_fast.clock.store(info.clock);
  g_fast.ring_bytes.store(info.ring_bytes);
  g_fast.ring_max_bytes.store(info.ring_max_bytes);
  // The wake descriptor keeps its number, so a writer never pokes a closed
  // (or reused) one.
  int old_wake = g_fast.wake_fd.load();
  if (old_wake < 0 || dup3(reply.fds[1].get(), old_wake, O_CLOEXEC) < 0) {
    g_fast.wake_fd.store(reply.fds[1].Release());
  }
  g_fast.ring_generation.fetch_add(1);
  return 0;
}

// Request/reply on the calling thread, for when no agent runs yet (start-up
// and the forked child). Notices that arrive first are applied in order.
int Client::CallDirect(ipc::MsgType type, const ipc::Encoder* body, std::span<const int> fds, Reply* reply) {
  uint32_t seq = next_seq_++;
  ipc::Encoder e = ipc::StartMessage(type, seq);
  if (body) e.bytes().insert(e.bytes().end(), body->bytes().begin(), body->bytes().end());
  if (int err = base::SendMessage(conn_.get(), e.bytes(), fds)) return base::TimeoutErrno(err);
  for (;;) {
    std::vector<uint8_t> bytes;
    std::vector<base::ScopedFd> got;
    if (int err = base::ReceiveMessage(conn_.get(), &bytes, &got)) {
      return err == ECONNRESET ? ENOTCONN : base::TimeoutErrno(err);
    }
    ipc::MessageHeader header;
    ipc::Decoder d({});
    if (!ipc::SplitMessage(bytes, &header, &d)) return EPROTO;
    if (header.type == ipc::MsgType::kSetStatus) {
      HandleNotice(d);
    } else if (header.type == ipc::MsgType::kReply && header.seq == seq) {
      return ParseReply(bytes, got, &header, reply);
    }
  }
}

void Client::StartAgent(bool connected) {
  std::thread(&Client::AgentMain, this, connected).detach();
}

int Client::Call(ipc::MsgType type, const ipc::Encoder* body, std::span<const int> fds, Reply* reply,
                 std::function<void(const Reply&)> on_reply, int timeout_ms,
                 std::function<void(int error)> on_late_reply) {
  PendingCall call{reply, std::move(on_reply)};
  std::unique_lock lock(mu_);
  if (dead_) return ENOTCONN;
  uint32_t seq = next_seq_++;
  ipc::Encoder e = ipc::StartMessage(type, seq);
  if (body) e.bytes().insert(e.bytes().end(), body->bytes().begin(), body->bytes().end());
  pending_[seq] = &call;
  if (int err = base::SendMessage(conn_.get(), e.bytes(), fds)) {
    pending_.erase(seq);
    return err == EPIPE ? ENOTCONN : base::TimeoutErrno(err);
  }
  if (timeout_ms < 0) timeout_ms = base::ClientTimeoutMs();
  if (!replied_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return call.done; })) {
    // Not answered in time; a late reply goes to on_late_reply, if any.
    if (pending_.erase(seq) != 0) {
      if (on_late_reply) late_.emplace(seq, std::move(on_late_reply));
      return ETIMEDOUT;
    }
    // The agent took the reply just now and is handing it over: `call` must
    // outlive that.
    replied_.wait(lock, [&] { return call.done; });
  }
  return 0;  // reply->error says how it went (ENOTCONN if the daemon went away)
}

void Client::AgentMain(bool connected) {
  pthread_setname_np(pthread_self(), "udiag-agent");
  // The agent never handles signals meant for the program.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  for (;;) {
    if (connected) {
      Serve(conn_.get());
      Disconnected();
    }
    Reconnect();
    connected = true;
  }
}

// Returns when the connection breaks.
void Client::Serve(int fd) {
  // The buffer is the client's, not the thread's: a forked child has no agent
  // thread, and memory reachable only from its stack would look leaked there.
  std::vector<uint8_t>& bytes = agent_buffer_;
  for (;;) {
    std::vector<base::ScopedFd> fds;
    int err = base::ReceiveMessage(fd, &bytes, &fds);
    // EAGAIN: the socket's receive timeout, which only the calls need.
    if (err == EMSGSIZE || err == EAGAIN) continue;
    if (err) break;
    ipc::MessageHeader header;
    ipc::Decoder body({});
    if (!ipc::SplitMessage(bytes, &header, &body)) continue;
    if (header.type == ipc::MsgType::kSetStatus) {
      HandleNotice(body);
      continue;
    }
    if (header.type != ipc::MsgType::kReply) continue;
    std::unique_lock lock(mu_);
    auto it = pending_.find(header.seq);
    if (it == pending_.end()) {
      if (auto late = late_.extract(header.seq)) {
        lock.unlock();
        Reply reply;
        ParseReply(bytes, fds, &header, &reply);
        late.mapped()(reply.error);
      }
      continue;
    }
    PendingCall* call = it->second;
    pending_.erase(it);
    ParseReply(bytes, fds, &header, call->reply);
    if (call->on_reply) {
      lock.unlock();
      call->on_reply(*call->reply);
      lock.lock();
    }
    call->done = true;
    replied_.notify_all();
  }
}

void Client::HandleNotice(ipc::Decoder& body) {
  ipc::SetStatus notice;
  if (!notice.Decode(body)) return;
  ApplyStatus(notice.event_id, notice.status);
  ipc::Encoder e = ipc::StartMessage(ipc::MsgType::kAck, 0);
  ipc::Ack{notice.notice}.Encode(e);
  base::SendMessage(conn_.get(), e.bytes());
}

void Client::ApplyStatus(uint32_t event_id, uint8_t status) {
  std::lock_guard lock(mu_);
  for (const LocalEnabler& en : enablers_) {
    if (en.event_id == event_id) WriteEnableBit(en, status != 0);
  }
}

void Client::Disconnected() {
  g_fast.connected.store(0);
  std::lock_guard lock(mu_);
  dead_ = true;
  // Nobody traces any more: bits go to 0 and writes see EBADF. The old ids
  // mean nothing to the next daemon; the enablers get new ones when they
  // are registered again.
  for (LocalEnabler& en : enablers_) {
    WriteEnableBit(en, false);
    en.event_id = 0;
  }
  ZeroStatusPage();
  for (auto& [_, call] : pending_) {
    call->reply->error = ENOTCONN;
    call->done = true;
  }
  pending_.clear();
  AbandonLateCalls();
  replied_.notify_all();
}

void Client::AbandonLateCalls() {
  for (auto& [_, on_late_reply] : late_) on_late_reply(ENOTCONN);
  late_.clear();
}

bool Client::HasEnabler(uint64_t addr, uint8_t bit) {
  std::lock_guard lock(mu_);
  return std::any_of(enablers_.begin(), enablers_.end(),
                     [&](const LocalEnabler& en) { return en.addr == addr && en.bit == bit; });
}

void Client::AddEnabler(const LocalEnabler& enabler, uint8_t status) {
  std::lock_guard lock(mu_);
  enablers_.push_back(enabler);
  WriteEnableBit(enabler, status != 0);
}

uint8_t Client::RemoveEnablers(uint64_t addr, uint8_t bit) {
  std::lock_guard lock(mu_);
  uint8_t size = 4;
  std::erase_if(enablers_, [&](const LocalEnabler& en) {
    if (en.addr != addr || en.bit != bit) return false;
    size = en.size;
    return true;
  });
  return size;
}

// fork: hold our locks across it so the child never inherits one mid-update.
void Client::AtForkPrepare() {
  legacy::ForkPrepare();
  g_client_mu.lock();
  DataFiles().mutex().lock();
  if (g_client) g_client->mu_.lock();
}

void Client::AtForkParent() {
  if (g_client) g_client->mu_.unlock();
  DataFiles().mutex().unlock();
  g_client_mu.unlock();
  legacy::ForkParent();
}

void Client::AtForkChild() {
  if (g_client) g_client->mu_.unlock();
  DataFiles().mutex().unlock();
  g_client_mu.unlock();
  legacy::ForkChild();
  // The parent's rings are not ours to write: every thread makes a new one.
  g_fast.ring_generation.fetch_add(1);
  if (g_client) g_client->ReconnectAfterFork();
}

void Client::ReconnectAfterFork() {
  // The agent thread did not survive fork and the parent's calls are not
  // ours: their late answers will never come here.
  pending_.clear();
  AbandonLateCalls();
  conn_.Reset();
  // A parent without a daemon leaves the child without one too: its agent
  // reconnects like the parent's.
  int saved = errno;
  bool connected = !dead_ && Connect(getppid()) == 0;
  if (connected) {
    InheritAfterFork();
  } else {
    Disconnected();
  }
  StartAgent(connected);
  errno = saved;
}

// The kernel copies the parent's enablers into the child; here the child
// asks for the same. Data files it inherited become writable for it too.
void Client::InheritAfterFork() {
  for (int fd : DataFiles().Descriptors()) {
    Reply reply;
    int fds[] = {fd};
    CallDirect(ipc::MsgType::kClaimDataFile, nullptr, fds, &reply);
  }
  if (enablers_.empty()) return;
  ipc::InheritRequest req;
  for (const LocalEnabler& en : enablers_) req.enablers.push_back({en.event_id, en.addr, en.bit, en.size});
  ipc::Encoder body;
  req.Encode(body);
  Reply reply;
  ipc::InheritReply statuses;
  ipc::Decoder d(reply.body);
  if (CallDirect(ipc::MsgType::kInheritEnablers, &body, {}, &reply) || reply.error ||
      !(d = ipc::Decoder(reply.body), statuses.Decode(d)) || statuses.statuses.size() != enablers_.size()) {
    for (const LocalEnabler& en : enablers_) WriteEnableBit(en, false);
    enablers_.clear();
    return;
  }
  std::vector<LocalEnabler> kept;
  for (size_t i = 0; i < enablers_.size(); ++i) {
    bool dropped = statuses.statuses[i] == ipc::kEnablerDropped;
    WriteEnableBit(enablers_[i], !dropped && statuses.statuses[i] != 0);
    if (!dropped) kept.push_back(enablers_[i]);
  }
  enablers_ = std::move(kept);
}

}  // namespace udiag::producer
