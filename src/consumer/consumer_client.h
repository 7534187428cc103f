// A consumer's connection to udiagd: reads, writes and lists paths of the
// daemon's virtual tracefs, streams trace_pipe, and asks for events to be
// enabled while it is connected. What the udiag CLI (and tests) are built on.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error_or.h"
#include "base/scoped_fd.h"
#include "ipc/protocol.h"

namespace udiag::consumer {

// True for the errors Connect() returns when nobody serves the directory:
// no socket there, or a stale one left by a daemon that died.
bool IsNoDaemonError(int err);

class ConsumerClient {
 public:
  // Receives trace_pipe text in arbitrary pieces (a line may be split);
  // returns false to stop streaming.
  using ChunkCallback = std::function<bool(std::string_view chunk)>;

  // Connects to the daemon serving `dir` (empty: the default directory, see
  // base::ResolveDaemonDir) and introduces itself as a consumer.
  static base::ErrorOr<ConsumerClient> Connect(const std::string& dir);

  ConsumerClient(ConsumerClient&&) = default;
  ConsumerClient& operator=(ConsumerClient&&) = default;

  // Each call returns the daemon's errno, or the transport's (ECONNRESET
  // when the daemon went away, EPROTO when it sent something unexpected,
  // ETIMEDOUT when it did not answer within UDIAG_TIMEOUT_MS, see
  // base/client_timeout.h).
  base::ErrorOr<std::string> Read(const std::string& path);
  // `append` is ">>"; otherwise ">", which for example clears `trace`.
  int Write(const std::string& path, std::string_view text, bool append);
  // Entries of a directory as (name, is_directory), in the daemon's order.
  base::ErrorOr<std::vector<std::pair<std::string, bool>>> List(const std::string& path);

  // Streams the trace_pipe at `path` into `on_chunk` until it returns false
  // (result 0), the daemon fails the request or the connection breaks (its
  // errno), or `*stop` becomes true. After a stop it keeps delivering until
  // `drain_quiet` passes without new text, so events still on their way from
  // a producer that just exited are not lost. The daemon goes on streaming
  // until the connection closes, so close the client once this returns.
  int StreamPipe(const std::string& path, const ChunkCallback& on_chunk,
                 const std::atomic<bool>* stop = nullptr,
                 std::chrono::milliseconds drain_quiet = std::chrono::milliseconds(0));

  // Enables the events matching `glob` now and whenever one is created, until
  // this connection closes (then they are disabled again). A bare glob matches
  // tracepoint names ("count_*"), one with a colon matches "system:name".
  // `instance` names instances/<instance> ("" = top): the events are enabled there.
  // A `filter` is written to each matching event's `filter` file there (a
  // bad one shows in that file and in the instance's error_log).
  int AutoEnable(const std::string& glob, const std::string& instance = "", const std::string& filter = "",
                 const std::string& trigger = "");

  // The daemon's process id as the kernel reports it for this connection
  // (SO_PEERCRED): 0 when it cannot tell (say, the daemon is in another pid
  // namespace).
  pid_t DaemonPid() const;

  // mkdir/rmdir of instances/<name> (`path` is "instances/<name>"): EEXIST,
  // EINVAL (bad name), ENOENT, EBUSY (a trace_pipe or record stream is open
  // on it), EPERM (not under instances/). An `owned` instance is removed with
  // its enables when this connection closes, however the client ends.
  int Mkdir(const std::string& path, bool owned = false);
  int Rmdir(const std::string& path);

  // Starts the binary record stream of instances/<instance> ("" = top) on
  // this connection (one per connection) and returns its shared ring and
  // wake-up socket (ipc/stream_ring.h, ipc/record_stream_format.h;
  // consumer::RecordStream reads them); with `pages`, records come as
  // ftrace pages. The stream lasts while both the socket and this
  // connection are open.
  // A trace.dat file open for writing whose cpu N pages go from
  // (N + 1) * region_bytes on (record/tracedat/region_layout.h): the daemon
  // may write a page-mode stream's pages there itself. Not owned.
  struct PageFile {
    int fd = -1;
    uint64_t region_bytes = 0;
    uint32_t cpus = 0;
  };
  struct RecordStreamFds {
    base::ScopedFd socket;
    base::ScopedFd ring;
    bool writes_file = false;  // the daemon took `file`: pages come as kFilePage frames
  };
  base::ErrorOr<RecordStreamFds> OpenRecordStream(const std::string& instance, bool pages = false,
                                                  const PageFile* file = nullptr);

 private:
  explicit ConsumerClient(base::ScopedFd fd) : fd_(std::move(fd)) {}

  // Sends a request and returns its sequence number through `seq`.
  int SendRequest(ipc::MsgType type, const ipc::Encoder& body, uint32_t* seq, std::span<const int> fds = {});
  // Receives the next message for `seq`, skipping any that belong to earlier
  // requests (say, a pipe that was abandoned). `timeout_ms` < 0 blocks;
  // ETIMEDOUT when nothing came in time.
  // Descriptors that come with it go to `fds` if given, else are closed.
  int ReceiveFor(uint32_t seq, int timeout_ms, ipc::MessageHeader* header, std::string* body,
                 std::vector<base::ScopedFd>* fds = nullptr);
  // ReceiveFor within base::ClientTimeoutMs() (UDIAG_TIMEOUT_MS): ETIMEDOUT
  // when the daemon stays silent that long.
  int ReceiveBounded(uint32_t seq, ipc::MessageHeader* header, std::string* body,
                     std::vector<base::ScopedFd>* fds = nullptr);
  // Collects the data chunks of `seq` up to its reply; returns the reply's
  // error, or ETIMEDOUT when the daemon is silent for ClientTimeoutMs().
  int CollectReply(uint32_t seq, std::string* data);
  // A plain request whose answer is a reply, possibly preceded by data chunks.
  int Call(ipc::MsgType type, const ipc::Encoder& body, std::string* data = nullptr);

  base::ScopedFd fd_;
  uint32_t next_seq_ = 1;
};

}  // namespace udiag::consumer
