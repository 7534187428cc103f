// udiagd's event loop: one thread that accepts clients, answers their
// requests against the registry and the tracefs tree, keeps every producer's
// enable bits in step with event status, and drains producer rings into the
// instances' buffers. Single-threaded on purpose: no locks, and a request
// sees a consistent world. Its member functions live in server_*.cc by
// concern (docs/architecture.md lists them).
#pragma once

#include <sys/epoll.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/scoped_fd.h"
#include "base/tsc_clock.h"
#include "base/unix_socket.h"
#include "ipc/protocol.h"
#include "ring/ring_reader.h"
#include "service/access_policy.h"
#include "service/event_registry.h"
#include "service/instance.h"
#include "service/record_stream_sender.h"
#include "service/run_merge.h"
#include "service/status_page.h"
#include "service/tracefs_tree.h"
#include "service/user_quotas.h"

namespace udiag::service {

class PageRun;  // service/page_run.h

// Each producer thread's ring. 4 MiB holds 9 ms of 10 M events/s of 32-byte
// payloads, more than the scheduling gaps of a busy 2-core guest; 1 MiB lost
// events there (docs/performance-history.md). Pages are only used as a thread's
// writes reach them.
inline constexpr uint32_t kDefaultRingBytes = 4 << 20;
// A thread whose ring overflowed moves to one four times as large, up to
// this: at 50 M events/s a thread fills 16 MiB in 7 ms, which a busy 2-core
// machine may keep the daemon off the CPU or waiting for its disk; 64 MiB
// lost nothing there in most runs where 16 MiB lost 0.1-5 %
// (docs/performance-history.md). Only threads that overflow pay for it, and only
// while their user's rings stay within half his limit (OnAddRing).
inline constexpr uint32_t kDefaultRingMaxBytes = 64 << 20;

struct ServerOptions {
  std::string dir;
  AccessPolicy policy;
  uint32_t ring_bytes = kDefaultRingBytes;  // per producer thread
  uint32_t ring_max_bytes = kDefaultRingMaxBytes;  // grown to at most
  UserLimits limits;
  bool verbose = false;
};

class Server : public EventRegistry::Observer {
 public:
  static base::ErrorOr<std::unique_ptr<Server>> Create(const ServerOptions& options);
  ~Server() override;

  // Runs until Stop() or a termination signal; returns the exit status.
  int Run();
  void Stop() { running_ = false; }

  // EventRegistry::Observer
  bool MayCreateEvent() override;
  void OnEventCreated(Event& event) override;
  void OnEventStatusChanged(Event& event) override;
  void OnEventDestroyed(const Event& event) override;

 private:
  struct Enabler {
    Event* event;
    uint64_t addr;
    uint8_t bit;
    uint8_t size;
  };
  // Auto-enable: a glob held in one instance ("" = top) while connected.
  struct AutoRule {
    std::string glob;
    std::string instance;
    std::string filter;   // for each event it matches ("": none)
    std::string trigger;  // likewise
  };
  using AutoKey = std::pair<std::string, uint32_t>;  // instance name, event id
  struct RingSource {
    std::unique_ptr<ring::RingReader> reader;
    pid_t pid;
    uint32_t tid;
    uint64_t owner;  // connection id
    uid_t uid;       // charged for its bytes
    uint64_t bytes;
    uint64_t serial = 0;  // of the rings added, 1 up
    // The serial of the ring its thread wrote to before this one (it
    // outgrew it), or 0: this one is drained only once that one is empty
    // or gone, so that the thread's events stay in time order.
    uint64_t follows = 0;
    // Where reading stopped at a page the producer was still filling, and
    // since when (HoldsOpenPage).
    uint64_t held_at = UINT64_MAX;
    uint64_t held_since_ns = 0;
    // Rounds in a row whose time limit left records in it.
    uint32_t held_back_rounds = 0;
    // Left alone since it was last drained, while a recording's pages
    // waited for the disk: what it lost meanwhile is counted as such.
    bool left_for_disk = false;
  };
  struct Connection {
    uint64_t id = 0;
    base::ScopedFd fd;
    base::PeerCredentials peer;
    Caller caller;
    bool greeted = false;
    ipc::Role role = ipc::Role::kConsumer;
    // Over the user's connection limit at accept: the first request is
    // answered with this errno and the connection closed.
    int refusal = 0;
    uint64_t refusal_deadline_ns = 0;  // closed then if it never asks
    std::vector<std::vector<uint8_t>> outbox;  // messages waiting for EPOLLOUT
    size_t outbox_bytes = 0;  // with kQueuedMessageOverhead each
    bool unread = false;      // dropped for not reading its replies: closed soon
    // Producer state.
    std::vector<Enabler> enablers;
    std::vector<bool> writable;  // by id - kFirstId: events it may put in its rings
    uint64_t notices_sent = 0;
    uint64_t notices_acked = 0;
    std::vector<Event*> perf_events;  // one entry per open perf_event fd, each holding a reference
    // Consumer state.
    Instance* pipe_instance = nullptr;
    uint32_t pipe_seq = 0;
    std::unique_ptr<RecordStreamSender> record_stream;
    bool stream_waits = false;  // the stream's ring is full: until the recorder pokes
    std::vector<AutoRule> auto_rules;
    std::set<AutoKey> auto_enabled;
    std::map<AutoKey, std::string> auto_filters;  // set by its rules; cleared with the last hold
  };
  struct DataFile {
    base::ScopedFd daemon_end;
    uid_t uid = 0;  // charged for the fd
    ino_t producer_inode = 0;
    std::vector<Event*> refs;  // index = write_index
  };
  // A reply held back until producers acknowledged the enable-bit changes
  // the request caused, so a write to `enable` returns with bits set.
  struct DeferredReply {
    uint64_t conn_id;
    uint32_t seq;
    std::map<uint64_t, uint64_t> awaiting;  // connection id -> notice number
    uint64_t deadline_ns;
  };

  explicit Server(const ServerOptions& options);
  int Init();

  void Accept();
  // accept() failed for want of fds: drop the pending connection (with the
  // reserve fd) and stop listening for a while instead of spinning.
  void OnOutOfFds(int err);
  void ResumeListeningWhenDue(uint64_t now);
  // Connections refused at accept that never sent a request.
  void ExpireRefusals(uint64_t now);
  // Refuses a request over `uid`'s limit of `r`, logging once per episode.
  int Refuse(const Connection& conn, Resource r, int err);
  void DropUnread(Connection& conn);
  void CloseUnread();
  void HandleReadable(Connection& conn);
  void HandleMessage(Connection& conn, const std::vector<uint8_t>& bytes, std::vector<base::ScopedFd>& fds);
  void CloseConnection(uint64_t conn_id);
  void HandleDataFileHangup(int fd);

  // Producer requests; each returns 0 or errno for the reply.
  int OnHello(Connection& conn, ipc::Decoder& body, uint32_t seq);
  int OnOpenDataFile(Connection& conn, uint32_t seq);
  int OnRegister(Connection& conn, ipc::Decoder& body, std::vector<base::ScopedFd>& fds, uint32_t seq);
  int OnUnregister(Connection& conn, ipc::Decoder& body);
  int OnDescribeIndex(Connection& conn, ipc::Decoder& body, std::vector<base::ScopedFd>& fds, uint32_t seq);
  int OnClaimDataFile(Connection& conn, std::vector<base::ScopedFd>& fds);
  int OnAddRing(Connection& conn, std::vector<base::ScopedFd>& fds);
  int OnInheritEnablers(Connection& conn, ipc::Decoder& body, uint32_t seq);
  void OnAck(Connection& conn, ipc::Decoder& body);
  // Consumer requests.
  int OnTreeRead(Connection& conn, ipc::Decoder& body, uint32_t seq);
  int OnTreeList(Connection& conn, ipc::Decoder& body, uint32_t seq);
  int OnTreePipe(Connection& conn, ipc::Decoder& body, uint32_t seq);
  int OnAutoEnable(Connection& conn, ipc::Decoder& body);
  int OnTreeMkdir(Connection& conn, ipc::Decoder& body);
  int OnTreeRmdir(Connection& conn, ipc::Decoder& body);
  int OnRecordStream(Connection& conn, ipc::Decoder& body, std::vector<base::ScopedFd>& fds, uint32_t seq);
  void ApplyAutoEnable(Connection& conn, Event& event);
  void ReleaseAutoEnables(Connection& conn);
  // Forgets every auto-enable that targets the removed instance `name`.
  void ForgetAutoEnables(const std::string& name);
  // Removes the instances `conn` owns, ending other clients' readers of them.
  void RemoveOwnedInstances(const Connection& conn);
  void DetachReaders(Instance* instance);
  void EndRecordStream(Connection& conn);

  DataFile* FindDataFile(const std::vector<base::ScopedFd>& fds);
  ipc::EventInfo DescribeEvent(const Event& event) const;

  void Send(Connection& conn, std::vector<uint8_t> message);
  void SendReply(Connection& conn, uint32_t seq, int error);
  // A successful reply whose body is one protocol struct.
  template <typename Body>
  void SendReplyBody(Connection& conn, uint32_t seq, const Body& body) {
    ipc::Encoder e = ipc::StartMessage(ipc::MsgType::kReply, seq);
    body.Encode(e);
    Send(conn, std::move(e.bytes()));
  }
  void SendChunked(Connection& conn, uint32_t seq, const std::string& bytes);
  void FlushOutbox(Connection& conn);
  void UpdatePollMask(Connection& conn);

  // A ring's record whose header was checked, staged for delivery: its
  // payload is still in the ring, to be copied out and checked. Or a whole
  // page (event null), checked in its copy staged_pages_[page].
  struct DrainedRecord {
    const Event* event;
    EntryMeta meta;
    ring::PayloadSource payload;
    uint32_t page = 0;
  };
  // A page checked in its copy, and what taking it apart needs: the page in
  // its ring (there until the round's Release) and the ring's context. A
  // copy in the record stream's pool (`lent`) is not trusted after its
  // check (the recorder can write there): such a page is taken apart from
  // its ring, each record checked again.
  struct StagedPage {
    CheckedPage checked;
    ring::PayloadSource source;
    const std::vector<bool>* writable;  // its producer's (null: gone)
    uint64_t latest;                    // nothing on it may be later (its clock)
    bool tsc;
    bool lent;
  };
  struct DrainTotals {
    size_t records = 0;  // read, kept or rejected
    uint64_t bytes = 0;  // of ring consumed
  };
  void DrainBeforeRequest(const Connection& conn);
  int OnPerfAttach(Connection& conn, ipc::Decoder& body, bool attach);
  void SetPerfRefs(Event* event, int delta);
  // `flush_open_pages`: also the events of pages their producers are still
  // filling, which a recording otherwise leaves for a while (HoldsOpenPage).
  DrainTotals DrainRings(bool flush_open_pages = false);
  size_t DrainRing(RingSource& src, size_t max_records, uint64_t before, size_t* delivered_now);
  uint64_t RoundTimeLimit(size_t share);
  bool HeldBackTooLong(const RingSource& src) const;
  void NoteHeldBack(RingSource& src, bool held_back);
  bool HoldsOpenPage(const RingSource& src, uint64_t now) const;
  uint64_t HeldIfSince(bool tsc, uint64_t latest) const;
  bool PageLine(bool tsc, uint64_t page_start, uint64_t now, base::TscClock::Line* line);
  const Event* AllowedEvent(uint16_t type, const std::vector<bool>* writable) const;
  template <typename Sink>
  void ForEachRecordOfStagedPage(StagedPage& page, const EntryMeta& meta, Sink&& sink);
  void DeliverPage(const EntryMeta& meta, StagedPage& page);
  void TakeOverlappingPagesApart();
  void UpdateHoldBack();
  bool OnlyConsumerIsAFullRecorder();
  bool WaitsForRingBefore(RingSource& src);
  size_t RecordsThatFit() const;
  void DeliverInTimeOrder(bool per_cpu);
  bool DeliverRecord(PageRun& run, Instance* direct, const Event& event, const EntryMeta& meta,
                     const ring::PayloadSource& payload);
  int WaitForEvents(epoll_event* events, int max_events, uint64_t timeout_ns);
  void AllowWrites(Connection& conn, const Event& event);
  void PumpPipes();
  void PumpRecordStreams();
  // RecordStreamSender::MaySleep for every record stream: false when the
  // loop is to take a write that ended first.
  bool RecordStreamsMaySleep();
  void ResolveDeferred(bool force_expired);
  void SetRingsSleeping(bool sleeping);
  // RingReader::SetConsumerDozing for every ring; false when some ring's
  // producer would not poke a dozing daemon.
  bool SetRingsDozing(bool dozing);
  std::string CommOf(uint32_t tid) const;
  std::string TaskComm(uint32_t tid) const;
  void RememberComm(pid_t pid, uint32_t tid);

  ServerOptions options_;
  base::ScopedFd epoll_;
  base::ScopedFd listener_;
  base::ScopedFd wake_;     // producers poke it when we said we sleep
  base::ScopedFd signals_;  // SIGTERM/SIGINT
  base::ScopedFd lock_;     // flock'ed pid file: one daemon per directory
  std::unique_ptr<StatusPage> status_page_;
  std::unique_ptr<EventRegistry> registry_;
  std::unique_ptr<InstanceSet> instances_;
  std::unique_ptr<TracefsTree> tree_;
  UserQuotas quotas_;
  std::unordered_map<uint32_t, uid_t> event_creators_;  // event id -> uid charged for it
  base::ScopedFd reserve_fd_;            // given up to accept (and close) when out of fds
  uint64_t listening_paused_until_ = 0;  // 0: listening
  bool out_of_fds_ = false;              // logged this episode
  bool ring_version_refused_ = false;    // logged once: a refused producer retries every second
  size_t refusals_ = 0;                  // connections with a refusal pending
  std::vector<uint64_t> unread_;         // connections to close: DropUnread
  base::TscClock tsc_clock_;
  ring::ClockDomain clock_domain_ = ring::ClockDomain::kMonotonic;  // what producers stamp with
  bool running_ = true;
  bool have_epoll_pwait2_ = true;  // until it fails with ENOSYS

  uint64_t next_conn_id_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections_;
  std::unordered_map<int, std::unique_ptr<DataFile>> data_files_;  // by daemon_end fd
  std::vector<RingSource> rings_;
  std::unordered_map<uint32_t, std::string> comms_;  // tid -> comm
  std::vector<DeferredReply> deferred_;
  std::map<AutoKey, int> auto_holds_;  // consumers holding an event enabled in an instance
  std::set<AutoKey> auto_turned_on_;   // enabled by a hold, not by hand
  // The request being handled: the notices it causes are awaited.
  Connection* current_request_ = nullptr;
  std::map<uint64_t, uint64_t> current_awaiting_;
  uint64_t records_rejected_ = 0;
  std::vector<DrainedRecord> drained_;  // reused across rounds
  // Where a record that is not built in a recorder's page is built.
  std::unique_ptr<uint8_t[]> scratch_ = std::make_unique<uint8_t[]>(schema::kCommonHeaderSize + ring::kMaxPayload);
  std::vector<TimeRun> runs_;  // each ring's records in drained_, in time order
  // This pass's recorder that takes whole pages (PerCpuPageKeeper), the
  // pages a round staged for it, checked in their copies (in its record
  // stream's pool, else in page_arena_), and whether open pages are drained too.
  Instance* page_keeper_ = nullptr;
  size_t page_weight_ = ring::RingReader::kPageWeight;  // of a whole page, this round (DrainRings)
  std::vector<StagedPage> staged_pages_;
  std::vector<bool> apart_;               // of staged_pages_, by TakeOverlappingPagesApart
  std::vector<DrainedRecord> regrouped_;  // its scratch space, swapped with drained_
  std::unique_ptr<uint8_t[]> page_arena_;
  bool flush_open_pages_ = false;
  // When the first open page left in a ring is due to be drained anyway
  // (UINT64_MAX: none is left): the event loop wakes up by then.
  uint64_t open_page_due_ns_ = UINT64_MAX;
  std::vector<KeyedRun> cpu_stretches_;  // scratch space of DeliverInTimeOrder
  std::vector<TimeRun> cpu_runs_;        // likewise
  std::vector<Instance*> holding_back_;  // this drain round's, see UpdateHoldBack
  uint32_t writer_wait_ms_ = 0;          // what the rings' full_wait_ms says
  size_t first_ring_ = 0;                // where the next drain round starts
  uint64_t rings_added_ = 0;             // RingSource::serial of the last one
};

}  // namespace udiag::service
