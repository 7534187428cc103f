// The producer process's link to udiagd: one connection per process, and one
// agent thread that reads it. The agent applies enable-bit notices to the
// registered (addr, bit) words with atomic OR/AND — the kernel's remote
// write, done from inside — and hands replies to the threads that asked.
// Replies with side effects on enablers are applied by the agent too, in
// connection order, so a notice can never overtake the registration it
// concerns. When the daemon goes away the agent reconnects in the background
// and registers everything again (reconnect.cc).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/scoped_fd.h"
#include "ipc/protocol.h"

namespace udiag::producer {

// What the write path reads on every event: kept together on one cache line.
struct alignas(64) FastState {
  std::atomic<const uint8_t*> status_page{nullptr};  // byte per event id, read-only
  std::atomic<uint32_t> first_event_id{0};
  std::atomic<uint32_t> status_page_bytes{0};
  std::atomic<uint32_t> epoch{0};            // connection to the daemon; 0 = none
  std::atomic<uint32_t> ring_generation{1};  // bumped by fork and reconnects
  std::atomic<uint32_t> clock{0};            // ring::ClockDomain
  std::atomic<uint32_t> ring_bytes{0};
  std::atomic<uint32_t> ring_max_bytes{0};  // a ring that overflowed grows up to it
  std::atomic<int> wake_fd{-1};
  std::atomic<uint32_t> connected{0};  // 0 from a daemon's loss until re-registered
};
extern FastState g_fast;

// The daemon's words for producers, in its status page's memfd; null before
// the first connection (or from a daemon whose memfd has none).
extern std::atomic<const ipc::ProducerPolicy*> g_policy;

// Writes refused because the daemon was gone, records left in a dead
// daemon's rings, and those of a ring the daemon refused once the thread
// had written into it: reported to the daemon as a ring's losses, by the
// next ring a thread hands over (thread_ring.cc).
extern std::atomic<uint64_t> g_lost_while_disconnected;

struct Reply {
  int error = 0;
  std::vector<uint8_t> body;
  std::vector<base::ScopedFd> fds;
};

struct LocalEnabler {
  uint32_t event_id;
  uint64_t addr;
  uint8_t bit;
  uint8_t size;
  // How it was registered, to register it again on a new daemon: the data
  // file, the write index the program got, the flags and the command.
  int fd = -1;
  uint32_t write_index = 0;
  uint16_t flags = 0;
  std::string command{};
};

class Client {
 public:
  // The process's client, connecting on first use: nullptr with errno set
  // (ENOENT: no daemon; EACCES: refused) when there is none.
  static Client* Get();

  // Sends a request and waits for the reply, at most `timeout_ms` (by
  // default ClientTimeoutMs()), then ETIMEDOUT. `on_reply` runs on the
  // agent thread before any later message is handled. A reply that comes
  // after ETIMEDOUT is dropped, unless `on_late_reply` is given: it then
  // gets the reply's error (0: done) on the agent thread, or ENOTCONN if
  // the connection breaks first (or, in a forked child, at the fork).
  int Call(ipc::MsgType type, const ipc::Encoder* body, std::span<const int> fds, Reply* reply,
           std::function<void(const Reply&)> on_reply = {}, int timeout_ms = -1,
           std::function<void(int error)> on_late_reply = {});

  bool HasEnabler(uint64_t addr, uint8_t bit);
  // Agent-thread helpers for Call's on_reply: keep the local enabler list
  // and the bits in memory right.
  void AddEnabler(const LocalEnabler& enabler, uint8_t status);
  // Returns the word size of the enablers removed (4 if none matched).
  uint8_t RemoveEnablers(uint64_t addr, uint8_t bit);

  // Called in a forked child: a new connection that inherits the parent's
  // enablers and data files.
  void ReconnectAfterFork();

  // Delays between reconnection attempts: doubling from the first to the last.
  static constexpr int kFirstRetryMs = 50;
  static constexpr int kLastRetryMs = 1000;

 private:
  struct PendingCall {
    Reply* reply;
    std::function<void(const Reply&)> on_reply;
    bool done = false;
  };

  Client() = default;
  int Connect(int forked_from);
  int CallDirect(ipc::MsgType type, const ipc::Encoder* body, std::span<const int> fds, Reply* reply);
  // The agent: serves the connection and, when it breaks, reconnects.
  void StartAgent(bool connected);
  void AgentMain(bool connected);
  void Serve(int fd);
  void HandleNotice(ipc::Decoder& body);
  void Disconnected();
  // Runs the on_late_reply of every call still waiting, with ENOTCONN.
  void AbandonLateCalls();
  // reconnect.cc: connects with backoff until a daemon answers and this
  // process's data files and enablers are registered on it again.
  void Reconnect();
  int Replay();
  int ReplayDataFiles();
  int ReplayEnablers();
  int OpenDataFileDirect(base::ScopedFd* out);
  void ApplyStatus(uint32_t event_id, uint8_t status);
  void InheritAfterFork();

  static void AtForkPrepare();
  static void AtForkParent();
  static void AtForkChild();

  std::mutex mu_;  // guards everything below
  std::condition_variable replied_;
  base::ScopedFd conn_;
  uint32_t next_seq_ = 1;
  std::map<uint32_t, PendingCall*> pending_;
  std::map<uint32_t, std::function<void(int error)>> late_;  // by seq: calls that timed out
  std::vector<LocalEnabler> enablers_;
  bool dead_ = false;
  std::vector<uint8_t> agent_buffer_;  // only the agent thread touches it
};

// Atomically sets or clears the enabler's bit in this process's memory.
void WriteEnableBit(const LocalEnabler& enabler, bool on);

}  // namespace udiag::producer
