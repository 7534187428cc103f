// The control protocol between udiagd and its clients (libudiag producers and
// consumers such as the udiag CLI), over one SOCK_SEQPACKET connection each.
//
// Every message is a MessageHeader followed by a body. Requests carry a
// sequence number that the reply echoes; the daemon also sends unsolicited
// notices (SetStatus) that producers acknowledge. The first message on a
// connection is Hello, which fixes the connection's role.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "schema/loc_check.h"
#include "ipc/wire.h"

namespace udiag::ipc {

inline constexpr uint32_t kProtocolVersion = 1;

enum class MsgType : uint32_t {
  // Any client -> daemon.
  kHello = 1,
  // Producer -> daemon.
  kOpenDataFile = 10,  // reply carries the data-file fd
  kRegister,           // fd: data file
  kUnregister,
  kDelete,
  kDescribeIndex,      // fd: data file
  kAddRing,            // fd: sealed ring memfd
  kInheritEnablers,    // sent by a forked child
  kAck,                // acknowledges a SetStatus notice
  kClaimDataFile,      // fd: data file inherited across fork; its events become writable
  kPerfAttach,         // a perf_event fd on an event opened (the preload): sets the perf status bit
  kPerfDetach,         // ...and closed
  // Consumer -> daemon.
  kTreeRead = 30,      // reply preceded by kData chunks
  kTreeWrite,
  kTreeList,
  kTreePipe,           // kData chunks until the client hangs up
  kAutoEnable,         // enable matching events, now and when created, while connected
  kTreeMkdir,          // make instances/<name>, optionally owned by this connection
  kTreeRmdir,
  kRecordStream,       // reply carries a wake-up socket and a stream ring memfd: see record_stream_format.h
  // Daemon -> client.
  kReply = 100,
  kData,
  kSetStatus,
};

// udiag's event ids: the upper half of ftrace's 16-bit common_type, above
// the ids the kernel gives its own trace events (the daemon also skips any
// the running kernel uses). The preload tells its perf opens apart by them.
inline constexpr uint32_t kFirstEventId = 32768;
inline constexpr uint32_t kLastEventId = 65535;

enum class Role : uint32_t { kProducer = 1, kConsumer = 2 };

struct MessageHeader {
  MsgType type;
  uint32_t seq;
  int32_t error;  // replies: 0 or a positive errno
  uint32_t reserved;
};
static_assert(sizeof(MessageHeader) == 16);

// Starts a message: header then the body the caller appends.
Encoder StartMessage(MsgType type, uint32_t seq, int32_t error = 0);
// Splits a received message. False when it is shorter than a header.
bool SplitMessage(const std::vector<uint8_t>& bytes, MessageHeader* header, Decoder* body);

struct Hello {
  uint32_t version = kProtocolVersion;
  Role role = Role::kProducer;
  int32_t forked_from = 0;  // a forked producer's parent pid, else 0
  // A producer's ring layout (ring::kRingVersion), so that a daemon of
  // another layout refuses it here rather than each of its rings later.
  // 0: not said (a producer from before the word, or a consumer).
  uint32_t ring_version = 0;
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

// Words the daemon keeps for every producer in the status page's memfd,
// after its status_page_bytes, at ProducerPolicyOffset.
struct ProducerPolicy {
  // How long a full ring waits for room before it drops (the full_wait_ms
  // the daemon gives each ring it maps: ring_layout.h). A new ring starts
  // with it, so that it waits as a recording asks even before the daemon
  // has mapped it.
  std::atomic<uint32_t> ring_full_wait_ms;
};
inline constexpr size_t ProducerPolicyOffset(size_t status_page_bytes) { return (status_page_bytes + 63) & ~size_t{63}; }
inline constexpr size_t StatusMemfdBytes(size_t status_page_bytes) {
  return ProducerPolicyOffset(status_page_bytes) + sizeof(ProducerPolicy);
}

// Reply to a producer's Hello; fds: [status page memfd (read-only), wake eventfd].
struct HelloReply {
  uint32_t first_event_id = 0;  // status page byte i describes event first_event_id + i
  uint32_t status_page_bytes = 0;
  uint32_t clock = 0;           // ring::ClockDomain producers must stamp with
  uint32_t ring_bytes = 0;      // data-area size of each thread's ring
  // The largest a thread's ring grows to once it overflowed (ring_bytes:
  // it never grows). A daemon before it leaves it out of the message.
  uint32_t ring_max_bytes = 0;
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

// What a producer needs to write an event without asking the daemon.
struct EventInfo {
  uint32_t id = 0;
  uint32_t min_size = 0;
  std::vector<schema::LocCheck> locs;
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

struct RegisterRequest {
  uint16_t flags = 0;
  uint64_t enable_addr = 0;
  uint8_t enable_bit = 0;
  uint8_t enable_size = 0;
  std::string command;
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

struct RegisterReply {
  uint32_t write_index = 0;
  uint8_t status = 0;  // the event's status when the enabler was created
  EventInfo event;
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

struct UnregisterRequest {
  uint64_t addr = 0;
  uint8_t bit = 0;
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

struct PerfAttachRequest {  // kPerfAttach, kPerfDetach
  uint32_t event_id = 0;
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

struct NameRequest {  // kDelete
  std::string name;
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

struct DescribeIndexRequest {
  uint32_t index = 0;
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

struct InheritedEnabler {
  uint32_t event_id = 0;
  uint64_t addr = 0;
  uint8_t bit = 0;
  uint8_t size = 0;
};

struct InheritRequest {
  std::vector<InheritedEnabler> enablers;
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

// Per inherited enabler, the event's status, or kEnablerDropped.
inline constexpr uint8_t kEnablerDropped = 0xff;
struct InheritReply {
  std::vector<uint8_t> statuses;
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

struct SetStatus {
  uint64_t notice = 0;
  uint32_t event_id = 0;
  uint8_t status = 0;
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

struct Ack {
  uint64_t notice = 0;
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

struct PathRequest {  // kTreeRead, kTreeList, kTreePipe, kTreeRmdir
  std::string path;
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

// kAutoEnable. `instance` names instances/<instance> ("" = top); an older
// client's request ends after the glob.
struct AutoEnableRequest {
  std::string glob;
  std::string instance;
  std::string filter;   // written to each matching event's `filter` in the instance ("": none)
  std::string trigger;  // written to each matching event's `trigger` there ("": none)
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

struct MkdirRequest {
  std::string path;
  bool owned = false;  // removed when this connection closes (a record session)
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

// kTreeRmdir takes a PathRequest.

// kRecordStream: `instance` names instances/<instance> ("" = top). With
// `pages`, records come as ftrace pages (kPage frames) instead of kRecords;
// an older client's request ends after the instance. With `file_cpus` > 0
// as well, the request carries the recorder's trace.dat file (SCM_RIGHTS),
// whose cpu N pages go from (N + 1) * file_region_bytes on: the daemon
// writes them there itself if it can (record_stream_format.h, kFilePage),
// and says so in the reply's body (RecordStreamReply).
struct RecordStreamRequest {
  std::string instance;
  bool pages = false;
  uint64_t file_region_bytes = 0;
  uint32_t file_cpus = 0;
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

struct RecordStreamReply {
  bool writes_file = false;  // the daemon writes the pages into the file it was given
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

struct TreeWriteRequest {
  std::string path;
  bool append = false;    // ">>"; otherwise the open truncates (">")
  std::string text;
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

struct TreeListReply {
  std::vector<std::pair<std::string, bool>> entries;  // name, is_directory
  void Encode(Encoder& e) const;
  bool Decode(Decoder& d);
};

}  // namespace udiag::ipc
