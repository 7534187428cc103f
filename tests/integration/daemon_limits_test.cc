// Issue 13: one user cannot take the daemon down for everyone. A real
// udiagd (as root, a system daemon) and real client processes, the hostile
// ones running as uid 65534: per-user limits on connections, unread
// replies, events and ring memory, the role check, and running out of fds.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "base/daemon_dir.h"
#include "base/scoped_fd.h"
#include "base/unix_socket.h"
#include "integration_util.h"
#include "ipc/protocol.h"
#include "ring/ring_writer.h"
#include "seq_event.h"
#include "system_daemon_test.h"
#include "udiag/udiag.h"

namespace udiag::integration {
namespace {

constexpr uid_t kUser = 65534;
constexpr uid_t kOtherUser = 65533;
constexpr gid_t kGroup = 4545;  // producers and consumers

std::string Errno(int err) { return std::to_string(err); }

// The pipes through which a test and its child tell each other their
// steps (close-on-exec: a daemon started meanwhile must not hold them).
struct StepPipes {
  StepPipes() {
    int ends[4];
    if (pipe2(ends, O_CLOEXEC) < 0 || pipe2(ends + 2, O_CLOEXEC) < 0) return;
    from_child.Reset(ends[0]), to_parent.Reset(ends[1]), from_parent.Reset(ends[2]), to_child.Reset(ends[3]);
  }
  base::ScopedFd from_child, to_parent, from_parent, to_child;
};

// One step, told through a pipe: the byte `c`.
bool Tell(const base::ScopedFd& fd, char c) { return write(fd.get(), &c, 1) == 1; }
bool Heard(const base::ScopedFd& fd, char c) {
  pollfd p{fd.get(), POLLIN, 0};
  char got = 0;
  return poll(&p, 1, 10'000) == 1 && read(fd.get(), &got, 1) == 1 && got == c;
}

// How many producer rings this process has mapped.
int RingMappings() {
  std::ifstream maps("/proc/self/maps");
  int rings = 0;
  for (std::string line; std::getline(maps, line);)
    rings += line.find("memfd:udiag-ring") != std::string::npos;
  return rings;
}

// The KiB resident of this process's ring mapping of `size_kb` (header
// page included), or -1 when it has none.
int RingResidentKb(int size_kb) {
  std::ifstream smaps("/proc/self/smaps");
  bool ring = false;
  int size = 0;
  for (std::string line; std::getline(smaps, line);) {
    if (line.find('-') < line.find(' ')) {  // a mapping's first line: "start-end perms ..."
      ring = line.find("memfd:udiag-ring") != std::string::npos;
    } else if (ring && line.rfind("Size:", 0) == 0) {
      size = std::stoi(line.substr(5));
    } else if (ring && size == size_kb && line.rfind("Rss:", 0) == 0) {
      return std::stoi(line.substr(4));
    }
  }
  return -1;
}

// The test producers' "NAME u32 seq" event (seq_event.h), registered
// through libudiag, and its writes.
class SeqWriter {
 public:
  // "" or what failed; then waits (up to PollUntil's time) until enabled.
  std::string Register(const char* name) {
    fd_ = udiag_open();
    if (fd_ < 0 || register_seq_event(fd_, name, &enabled_, 0, &reg_) < 0) return "register " + Errno(errno);
    return WaitEnabled() ? "" : "never enabled";
  }
  bool WaitEnabled() {
    return PollUntil([&] { return __atomic_load_n(&enabled_, __ATOMIC_RELAXED) != 0; });
  }
  // Writes the next seq: 0 or the errno. written() counts the writes that succeeded.
  int WriteOne() {
    iovec iov[2] = {{&reg_.write_index, sizeof(reg_.write_index)}, {&seq_, sizeof(seq_)}};
    if (udiag_writev(fd_, iov, 2) < 0) return errno;
    ++seq_;
    return 0;
  }
  // Writes `count`: 0, or the first write's errno.
  int WriteMany(int count) {
    for (int i = 0; i < count; ++i) {
      if (int err = WriteOne()) return err;
    }
    return 0;
  }
  uint64_t written() const { return seq_; }
  // The child's side of a daemon's restart (DaemonLimitsTest::
  // RestartForChild), after its writes to the stopped daemon: the new
  // daemon enables the event again, and one more write takes a new ring.
  // What went wrong, or "written N" in all.
  std::string WriteOnceMoreAfterRestart(const StepPipes& pipes) {
    if (!Tell(pipes.to_parent, 'w') || !Heard(pipes.from_parent, 'n')) return "no new daemon";
    if (!WaitEnabled()) return "never enabled by the new daemon";
    if (int err = WriteOne()) return "write after the restart " + Errno(err);
    return "written " + std::to_string(written());
  }

 private:
  unsigned int enabled_ = 0;
  user_reg reg_{};
  int fd_ = -1;
  uint32_t seq_ = 0;
};

// A client speaking the wire protocol itself, to see exact replies.
class RawClient {
 public:
  // Connects and says Hello (a producer with `ring_version`); "" or what
  // went wrong.
  std::string Open(const std::string& dir, ipc::Role role, uint32_t ring_version = ring::kRingVersion) {
    auto fd = base::ConnectSeqpacket(base::ControlSocketPath(dir), 5000);
    if (!fd.ok()) return "connect " + Errno(fd.error());
    fd_ = std::move(fd).value();
    ipc::Encoder hello;
    ipc::Hello{ipc::kProtocolVersion, role, 0, role == ipc::Role::kProducer ? ring_version : 0}.Encode(hello);
    std::vector<base::ScopedFd> fds;
    std::vector<uint8_t> body;
    if (int err = Call(ipc::MsgType::kHello, hello, {}, &fds, &body)) return "hello " + Errno(err);
    if (role == ipc::Role::kProducer) {
      ipc::Decoder d(body);
      if (!hello_.Decode(d)) return "hello reply";
    }
    return "";
  }

  // Sends a request; returns the reply's errno (or the transport's). Data
  // chunks before the reply are counted in data_chunks().
  int Call(ipc::MsgType type, const ipc::Encoder& body, std::span<const int> fds = {},
           std::vector<base::ScopedFd>* got = nullptr, std::vector<uint8_t>* reply_body = nullptr) {
    uint32_t seq = next_seq_++;
    if (int err = Send(type, body, seq, fds)) return err;
    for (;;) {
      std::vector<uint8_t> bytes;
      std::vector<base::ScopedFd> received;
      if (int err = base::ReceiveMessage(fd_.get(), &bytes, &received)) return err;
      ipc::MessageHeader header;
      ipc::Decoder d({});
      if (!ipc::SplitMessage(bytes, &header, &d)) return EPROTO;
      if (header.seq != seq) continue;
      if (header.type == ipc::MsgType::kData) {
        ++data_chunks_;
        continue;
      }
      if (header.type != ipc::MsgType::kReply) continue;
      if (got) *got = std::move(received);
      if (reply_body) reply_body->assign(d.Rest().begin(), d.Rest().end());
      return header.error;
    }
  }

  int Send(ipc::MsgType type, const ipc::Encoder& body, uint32_t seq, std::span<const int> fds = {}) {
    ipc::Encoder e = ipc::StartMessage(type, seq);
    e.bytes().insert(e.bytes().end(), body.bytes().begin(), body.bytes().end());
    return base::SendMessage(fd_.get(), e.bytes(), fds);
  }
  uint32_t NextSeq() { return next_seq_++; }

  // A producer's user_events_data file.
  int OpenDataFile(base::ScopedFd* data_file) {
    std::vector<base::ScopedFd> got;
    if (int err = Call(ipc::MsgType::kOpenDataFile, ipc::Encoder(), {}, &got)) return err;
    if (got.size() != 1) return EPROTO;
    *data_file = std::move(got[0]);
    return 0;
  }

  int Register(int data_file, const std::string& command, uint64_t enable_addr) {
    ipc::Encoder e;
    ipc::RegisterRequest{0, enable_addr, 0, 4, command}.Encode(e);
    int fds[] = {data_file};
    return Call(ipc::MsgType::kRegister, e, fds);
  }

  // Maps a ring of the daemon's size (or `data_size`), as a producer thread
  // does, and hands it over.
  int AddRing(uint32_t data_size = 0) {
    ring::RingMapping m{-1, nullptr, 0};
    auto clock = static_cast<ring::ClockDomain>(hello_.clock);
    if (int err = ring::CreateRing(data_size ? data_size : hello_.ring_bytes, gettid(), clock, &m))
      return err;
    int fds[] = {m.fd};
    int err = Call(ipc::MsgType::kAddRing, ipc::Encoder(), fds);
    close(m.fd);
    munmap(m.base, m.bytes);  // the daemon keeps its own mapping
    return err;
  }

  int fd() const { return fd_.get(); }
  int data_chunks() const { return data_chunks_; }

 private:
  base::ScopedFd fd_;
  uint32_t next_seq_ = 1;
  int data_chunks_ = 0;
  ipc::HelloReply hello_;
};

// A child process running as another user: it runs `body`, reports the
// result, and holds what it opened until Release().
class ChildAs {
 public:
  ChildAs(uid_t uid, gid_t gid, const std::function<std::string()>& body) {
    // Close-on-exec: a daemon the test starts later must not hold the
    // release pipe open, or the child never sees Release().
    int report[2], release[2];
    if (pipe2(report, O_CLOEXEC) < 0 || pipe2(release, O_CLOEXEC) < 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(report[0]);
      close(release[1]);
      signal(SIGPIPE, SIG_IGN);
      std::string result = setgroups(0, nullptr) < 0 || setgid(gid) < 0 || setuid(uid) < 0 ? "setuid failed" : body();
      result += "\n";
      [[maybe_unused]] ssize_t n = write(report[1], result.data(), result.size());
      char byte;
      [[maybe_unused]] ssize_t r = read(release[0], &byte, 1);
      _exit(0);
    }
    close(report[1]);
    close(release[0]);
    report_ = report[0];
    release_ = release[1];
  }
  ~ChildAs() { Release(); }

  // What body() returned (waits for it).
  std::string Result() {
    std::string out;
    char c;
    while (read(report_, &c, 1) == 1 && c != '\n') out += c;
    return out;
  }

  void Release() {
    if (pid_ <= 0) return;
    close(release_);
    close(report_);
    WaitExit(pid_, 10s);
    pid_ = 0;
  }

 private:
  pid_t pid_ = -1;
  int report_ = -1, release_ = -1;
};

// Lines of `text` containing `needle`.
int CountLines(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

uint64_t RssKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("VmRSS:")) return std::stoull(line.substr(6));
  }
  return 0;
}

uint64_t CpuTicks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int i = 3; fields >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) {
      stime = std::stoull(field);
      break;
    }
  }
  return utime + stime;
}

size_t OpenFds(pid_t pid) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) ++n;
  return n;
}

class DaemonLimitsTest : public SystemDaemonTest {
 protected:
  void SetUp() override {
    SystemDaemonTest::SetUp();
    log_ = parent_.path() + "/udiagd.log";
  }

  void StartDaemon(std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--producer-group", std::to_string(kGroup), "--consumer-group", std::to_string(kGroup)});
    ASSERT_EQ(daemon_.Start(dir_, extra, log_), "");
  }

  // Starts a daemon with `extra` and a consumer connection that enables
  // `event` as soon as a producer registers it.
  consumer::ConsumerClient StartDaemonEnabling(const std::vector<std::string>& extra,
                                               const std::string& event) {
    StartDaemon(extra);
    auto client = MustConnect(dir_);  // aborts when the daemon did not start
    EXPECT_EQ(client.AutoEnable(event), 0) << event;
    return client;
  }

  // A consumer connection as `uid`, in a child: "ok" or the errno.
  std::string ConnectAs(uid_t uid) {
    ChildAs child(uid, kGroup, [&] {
      auto client = consumer::ConsumerClient::Connect(dir_);
      return client.ok() ? std::string("ok") : Errno(client.error());
    });
    return child.Result();
  }

  // A producer as `uid` in a child: a connection and a data file, then `steps`.
  std::unique_ptr<ChildAs> ProducerAs(uid_t uid, const std::function<std::string(RawClient&, int)>& steps) {
    return std::make_unique<ChildAs>(uid, kGroup, [this, steps] {
      static RawClient client;
      static base::ScopedFd file;
      if (std::string err = client.Open(dir_, ipc::Role::kProducer); !err.empty()) return err;
      if (int err = client.OpenDataFile(&file)) return "data file " + Errno(err);
      return steps(client, file.get());
    });
  }

  // Kills the stopped daemon and starts another with `rings` that enables
  // `event`, for a child in WriteOnceMoreAfterRestart that wrote `written`
  // events in all; `*trace` is then the new daemon's trace, which shows the
  // child's last event.
  void RestartForChild(const std::vector<std::string>& rings, const std::string& event,
                       const StepPipes& pipes, ChildAs& producer, uint64_t written, std::string* trace) {
    ASSERT_TRUE(Heard(pipes.from_child, 'w')) << producer.Result();
    ASSERT_EQ(kill(daemon_.pid(), SIGKILL), 0);
    daemon_.Stop();
    auto after = StartDaemonEnabling(rings, event);
    ASSERT_TRUE(Tell(pipes.to_child, 'n'));
    ASSERT_EQ(producer.Result(), "written " + std::to_string(written));
    EXPECT_TRUE(PollUntil([&] {
      auto read = after.Read("trace");
      *trace = read.ok() ? *read : "";
      return !SeqsOf(*trace, event).empty();
    })) << *trace;
    EXPECT_EQ(SeqsOf(*trace, event).size(), 1u) << *trace;
  }

  // Registers `command` as root, on a connection of its own: the errno.
  int RootRegisters(const std::string& command) {
    RawClient root;
    if (!root.Open(dir_, ipc::Role::kProducer).empty()) return -1;
    base::ScopedFd file;
    if (int err = root.OpenDataFile(&file)) return err;
    return root.Register(file.get(), command, 0);
  }

  std::string log_;
  DaemonProcess daemon_;
};

class RingsOfAKilledDaemonTest : public DaemonLimitsTest, public testing::WithParamInterface<bool> {};

TEST_F(DaemonLimitsTest, ConnectionsPerUserEndInEmfileForThatUserOnly) {
  StartDaemon({"--max-connections-per-user", "4"});
  ChildAs greedy(kUser, kGroup, [&] {
    static std::vector<consumer::ConsumerClient> held;  // lives until the child exits
    for (int i = 0; i < 4; ++i) {
      auto client = consumer::ConsumerClient::Connect(dir_);
      if (!client.ok()) return "connection " + std::to_string(i) + ": " + Errno(client.error());
      held.push_back(std::move(client).value());
    }
    auto fifth = consumer::ConsumerClient::Connect(dir_);
    auto sixth = consumer::ConsumerClient::Connect(dir_);
    return "fifth=" + Errno(fifth.ok() ? 0 : fifth.error()) + " sixth=" + Errno(sixth.ok() ? 0 : sixth.error());
  });
  EXPECT_EQ(greedy.Result(), "fifth=" + Errno(EMFILE) + " sixth=" + Errno(EMFILE));
  // Meanwhile root and another user connect as usual.
  auto root = MustConnect(dir_);
  EXPECT_TRUE(root.Read("user_events_status").ok());
  EXPECT_EQ(ConnectAs(kOtherUser), "ok");
  // Logged once for the episode, not once per refusal.
  EXPECT_EQ(CountLines(ReadFileText(log_), "uid 65534 reached its limit of connections"), 1) << ReadFileText(log_);
  // Once its connections close, the user may connect again.
  greedy.Release();
  EXPECT_TRUE(PollUntil([&] { return ConnectAs(kUser) == "ok"; }));
}

TEST_F(DaemonLimitsTest, DataFilesCountAsConnections) {
  StartDaemon({"--max-connections-per-user", "3"});
  ChildAs producer(kUser, kGroup, [&] {
    static RawClient client;
    static base::ScopedFd files[3];
    if (std::string err = client.Open(dir_, ipc::Role::kProducer); !err.empty()) return err;
    std::string result;
    for (auto& file : files) result += Errno(client.OpenDataFile(&file)) + " ";
    return result;
  });
  // The connection and two data files; the third is refused.
  EXPECT_EQ(producer.Result(), "0 0 " + Errno(EMFILE) + " ");
}

TEST_F(DaemonLimitsTest, UnreadRepliesDropTheConnectionAndMemoryStaysBounded) {
  StartDaemon({"--max-queued-kb-per-user", "1024"});
  auto root = MustConnect(dir_);
  const uint64_t rss_before = RssKb(daemon_.pid());
  // A consumer that asks and never reads; small replies, so the overhead
  // of each queued message counts.
  auto flood = [&](const std::string& dir) {
    RawClient client;
    if (std::string err = client.Open(dir, ipc::Role::kConsumer); !err.empty()) return err;
    ipc::Encoder list;
    ipc::PathRequest{"events"}.Encode(list);
    for (int i = 0; i < 2'000'000; ++i) {
      if (int err = client.Send(ipc::MsgType::kTreeList, list, client.NextSeq())) {
        return "dropped " + Errno(err);
      }
    }
    return std::string("never dropped");
  };
  ChildAs hostile(kUser, kGroup, [&] { return flood(dir_); });
  std::string result = hostile.Result();
  EXPECT_TRUE(result == "dropped " + Errno(EPIPE) || result == "dropped " + Errno(ECONNRESET)) << result;
  EXPECT_LT(RssKb(daemon_.pid()), rss_before + 32 * 1024) << "daemon RSS grew from " << rss_before << " kB";
  EXPECT_EQ(CountLines(ReadFileText(log_), "does not read its replies"), 1) << ReadFileText(log_);
  // Root, exempt from the per-user limit, was not touched.
  EXPECT_TRUE(root.Read("user_events_status").ok());
  EXPECT_EQ(ConnectAs(kOtherUser), "ok");
}

TEST_F(DaemonLimitsTest, UnreadRepliesPerConnectionApplyToRootToo) {
  StartDaemon({"--max-queued-kb-per-connection", "512"});
  RawClient client;
  ASSERT_EQ(client.Open(dir_, ipc::Role::kConsumer), "");
  ipc::Encoder list;
  ipc::PathRequest{"events"}.Encode(list);
  signal(SIGPIPE, SIG_IGN);
  int err = 0;
  for (int i = 0; i < 2'000'000 && !err; ++i) err = client.Send(ipc::MsgType::kTreeList, list, client.NextSeq());
  EXPECT_TRUE(err == EPIPE || err == ECONNRESET) << err;
  auto other = MustConnect(dir_);
  EXPECT_TRUE(other.Read("user_events_status").ok());
}

TEST_F(DaemonLimitsTest, RequestsOfTheOtherRoleAreRefusedBeforeAnyReply) {
  StartDaemon({});
  RawClient producer;
  ASSERT_EQ(producer.Open(dir_, ipc::Role::kProducer), "");
  ipc::Encoder read;
  ipc::PathRequest{"README"}.Encode(read);
  EXPECT_EQ(producer.Call(ipc::MsgType::kTreeRead, read), EACCES);
  EXPECT_EQ(producer.data_chunks(), 0) << "the file was sent before the refusal";
  RawClient consumer;
  ASSERT_EQ(consumer.Open(dir_, ipc::Role::kConsumer), "");
  base::ScopedFd file;
  EXPECT_EQ(consumer.OpenDataFile(&file), EACCES);
  // Control: the same requests in the right role succeed.
  EXPECT_EQ(consumer.Call(ipc::MsgType::kTreeRead, read), 0);
  EXPECT_GT(consumer.data_chunks(), 0);
  EXPECT_EQ(producer.OpenDataFile(&file), 0);
}

// A libudiag of another release writes rings this daemon cannot read: it is
// told so when it connects, and once in the daemon's log, not with ENOMEM
// on every write.
TEST_F(DaemonLimitsTest, ProducersOfAnotherRingVersionAreRefusedAtHello) {
  StartDaemon({});
  for (uint32_t version : {ring::kRingVersion - 1, ring::kRingVersion + 1}) {
    RawClient producer;
    EXPECT_EQ(producer.Open(dir_, ipc::Role::kProducer, version), "hello " + Errno(EPROTONOSUPPORT))
        << version;
  }
  RawClient same;
  EXPECT_EQ(same.Open(dir_, ipc::Role::kProducer), "");
  RawClient unsaid;  // a libudiag from before the word: its rings are checked one by one
  EXPECT_EQ(unsaid.Open(dir_, ipc::Role::kProducer, 0), "");
  std::string log = ReadFileText(log_);
  EXPECT_EQ(CountLines(log, "writes rings of version"), 1) << log;
  EXPECT_NE(log.find("this udiagd reads version " + std::to_string(ring::kRingVersion)), std::string::npos)
      << log;
}

TEST_F(DaemonLimitsTest, EventsPerUserEndInEmfile) {
  StartDaemon({"--max-events-per-user", "3"});
  auto producer = ProducerAs(kUser, [](RawClient& client, int file) {
    std::string result;
    for (int i = 0; i < 4; ++i) result += Errno(client.Register(file, "lim_" + std::to_string(i) + " u32 v", 8 * i)) + " ";
    // An existing event costs nothing.
    result += Errno(client.Register(file, "lim_0 u32 v", 64));
    return result;
  });
  EXPECT_EQ(producer->Result(), "0 0 0 " + Errno(EMFILE) + " 0");
  EXPECT_EQ(CountLines(ReadFileText(log_), "uid 65534 reached its limit of events"), 1);
  // Root and another user still create events.
  EXPECT_EQ(RootRegisters("root_event u32 v"), 0);
  auto other = ProducerAs(kOtherUser, [](RawClient& client, int file) {
    return Errno(client.Register(file, "other_event u32 v", 0));
  });
  EXPECT_EQ(other->Result(), "0");
}

TEST_F(DaemonLimitsTest, EnablersPerUserEndInEnomem) {
  StartDaemon({"--max-enablers-per-user", "3"});
  auto producer = ProducerAs(kUser, [](RawClient& client, int file) {
    std::string result;
    for (int i = 0; i < 4; ++i) result += Errno(client.Register(file, "shared u32 v", 8 * i)) + " ";
    // Unregistering one makes room for another.
    ipc::Encoder unregister;
    ipc::UnregisterRequest{0, 0}.Encode(unregister);
    result += Errno(client.Call(ipc::MsgType::kUnregister, unregister)) + " ";
    result += Errno(client.Register(file, "shared u32 v", 64));
    return result;
  });
  EXPECT_EQ(producer->Result(), "0 0 0 " + Errno(ENOMEM) + " 0 0");
  EXPECT_EQ(RootRegisters("shared u32 v"), 0);
}

TEST_F(DaemonLimitsTest, RingMemoryPerUserEndsInEnomem) {
  // Rings of 64 KiB (and a header page): 1 MiB holds fewer than 16.
  StartDaemon({"--ring-kb", "64", "--max-ring-mb-per-user", "1"});
  ChildAs producer(kUser, kGroup, [&] {
    static RawClient client;
    if (std::string err = client.Open(dir_, ipc::Role::kProducer); !err.empty()) return err;
    for (int i = 0; i < 64; ++i) {
      if (int err = client.AddRing()) return std::to_string(i) + " rings, then " + Errno(err);
    }
    return std::string("64 rings");
  });
  std::string result = producer.Result();
  EXPECT_EQ(result.substr(result.find(',')), ", then " + Errno(ENOMEM)) << result;
  EXPECT_GE(std::stoi(result), 14) << result;  // 1 MiB / (64 KiB + header)
  RawClient root;
  ASSERT_EQ(root.Open(dir_, ipc::Role::kProducer), "");
  EXPECT_EQ(root.AddRing(), 0);
}

TEST_F(DaemonLimitsTest, RingsOfTheLargestSizeStopAtHalfTheRingMemory) {
  // 1 MiB of ring memory; rings of 64 KiB growing to 256 KiB, each with a
  // header page: two of the largest would take more than half of it.
  StartDaemon({"--ring-kb", "64", "--ring-max-kb", "256", "--max-ring-mb-per-user", "1"});
  auto as_user = ProducerAs(kUser, [](RawClient& client, int) {
    std::string result = Errno(client.AddRing(256 << 10));
    result += " " + Errno(client.AddRing(256 << 10));
    // What is left is for threads' first rings, up to the whole limit.
    int small = 0;
    while (client.AddRing() == 0) ++small;
    return result + " " + std::to_string(small);
  });
  // 260 KiB taken; refused at 520 KiB; then 11 of 68 KiB fit in 1 MiB.
  EXPECT_EQ(as_user->Result(), "0 " + Errno(ENOMEM) + " 11");
  // The limit is no limit to root, but half of it still bounds his largest rings.
  RawClient root;
  ASSERT_EQ(root.Open(dir_, ipc::Role::kProducer), "");
  EXPECT_EQ(root.AddRing(256 << 10), 0);
  EXPECT_EQ(root.AddRing(256 << 10), ENOMEM);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(root.AddRing(), 0);
}

// Rings the daemon refuses after their thread stopped waiting for the
// answer: the daemon was stopped when the thread handed its ring over and
// when it outgrew that one, and then finds the user over its ring memory.
// What the thread wrote in both is counted lost, reported by its next ring:
// every write that succeeded is in the trace or counted lost.
TEST_F(DaemonLimitsTest, RingsRefusedLateHaveTheirEventsCountedLost) {
  // Rings of 64 KiB growing to 256 KiB; 1 MiB holds 15 of 64 KiB with
  // their headers.
  auto consumer =
      StartDaemonEnabling({"--ring-kb", "64", "--ring-max-kb", "256", "--max-ring-mb-per-user", "1"}, "late");
  // Each step of the child and the parent, told through pipes.
  const StepPipes pipes;
  ASSERT_TRUE(pipes.to_child);
  const auto& [from_child, to_parent, from_parent, to_child] = pipes;
  constexpr int kWrittenStopped = 6000;  // 16-byte events: more than 64 KiB hold
  ChildAs producer(kUser, kGroup, [&]() -> std::string {
    setenv("UDIAG_DIR", dir_.c_str(), 1);
    // Another connection takes all of the user's ring memory.
    static std::optional<RawClient> filler(std::in_place);
    if (std::string err = filler->Open(dir_, ipc::Role::kProducer); !err.empty()) return err;
    int held = 0;
    while (filler->AddRing() == 0) ++held;
    static SeqWriter writer;
    if (std::string err = writer.Register("late"); !err.empty()) return err;
    // The parent stops the daemon: this thread's ring goes unanswered.
    if (!Tell(to_parent, 'e') || !Heard(from_parent, 's')) return "no stop";
    if (int err = writer.WriteMany(kWrittenStopped)) return "write while stopped " + Errno(err);
    // The daemon runs again and refuses the ring; the thread learns of it
    // as it opens a page, and asks for a ring again only after a while.
    if (!Tell(to_parent, 'w') || !Heard(from_parent, 'c')) return "no cont";
    int err = 0;
    const auto give_up = std::chrono::steady_clock::now() + 10s;
    for (int i = 1; !(err = writer.WriteOne()) && std::chrono::steady_clock::now() < give_up; ++i) {
      if (i % 100 == 0) std::this_thread::sleep_for(1ms);
    }
    // With the user's memory free again, the thread gets a ring, and that
    // ring reports what the refused one held.
    filler.reset();
    if (!PollUntil([&] { return writer.WriteOne() == 0; })) return "no ring after the memory was freed";
    return "held " + std::to_string(held) + " refused with " + Errno(err) + " written " +
           std::to_string(writer.written());
  });
  ASSERT_TRUE(Heard(from_child, 'e')) << producer.Result();
  ASSERT_EQ(kill(daemon_.pid(), SIGSTOP), 0);
  ASSERT_TRUE(Tell(to_child, 's'));
  const bool wrote = Heard(from_child, 'w');
  ASSERT_EQ(kill(daemon_.pid(), SIGCONT), 0);
  ASSERT_TRUE(wrote) << producer.Result();
  ASSERT_TRUE(Tell(to_child, 'c'));
  const std::string result = producer.Result();
  ASSERT_EQ(result.rfind("held ", 0), 0u) << result;
  const uint64_t written = std::stoull(result.substr(result.find("written ") + 8));
  uint64_t kept = 0, lost = 0;
  PollUntil([&] {
    auto read = consumer.Read("trace");
    const std::string trace = read.ok() ? *read : "";
    kept = 0;
    for (const auto& [_, copies] : SeqsOf(trace, "late")) kept += copies;
    lost = LostCount(trace);
    return kept + lost >= written;
  });
  EXPECT_EQ(kept + lost, written) << result << ": kept " << kept << ", lost " << lost;
  EXPECT_GE(lost, uint64_t{kWrittenStopped}) << result << ": kept " << kept;
  // Once refused, the thread's writes fail until it has a ring again.
  EXPECT_NE(result.find("refused with " + Errno(ENOMEM)), std::string::npos) << result;
}

// A daemon killed while it was stopped never drained a thread's ring nor
// the one the thread outgrew it into: the next daemon is told of every
// event in both, as lost. With `taken_before`, the daemon took the first
// ring (and drained one event) before it was stopped; else it answered
// for neither ring.
TEST_P(RingsOfAKilledDaemonTest, HaveTheirUndrainedEventsCountedLost) {
  const bool taken_before = GetParam();
  const std::vector<std::string> rings = {"--ring-kb", "64", "--ring-max-kb", "256"};
  auto before = StartDaemonEnabling(rings, "orphan");
  const StepPipes pipes;
  ASSERT_TRUE(pipes.to_child);
  const auto& [from_child, to_parent, from_parent, to_child] = pipes;
  const size_t written_before = taken_before ? 1 : 0;
  // 16-byte events: more than 64 KiB hold, fewer than 256 KiB.
  constexpr int kWrittenStopped = 6000;
  ChildAs producer(kUser, kGroup, [&]() -> std::string {
    setenv("UDIAG_DIR", dir_.c_str(), 1);
    static SeqWriter writer;
    if (std::string err = writer.Register("orphan"); !err.empty()) return err;
    if (int err = writer.WriteMany(static_cast<int>(written_before)))
      return "write before the stop " + Errno(err);
    if (!Tell(to_parent, 'e') || !Heard(from_parent, 's')) return "no stop";
    if (int err = writer.WriteMany(kWrittenStopped)) return "write while stopped " + Errno(err);
    return writer.WriteOnceMoreAfterRestart(pipes);
  });
  ASSERT_TRUE(Heard(from_child, 'e')) << producer.Result();
  ASSERT_TRUE(PollUntil([&] {
    auto read = before.Read("trace");
    return read.ok() && SeqsOf(*read, "orphan").size() == written_before;
  }));
  ASSERT_EQ(kill(daemon_.pid(), SIGSTOP), 0);
  ASSERT_TRUE(Tell(to_child, 's'));
  std::string trace;
  ASSERT_NO_FATAL_FAILURE(
      RestartForChild(rings, "orphan", pipes, producer, written_before + kWrittenStopped + 1, &trace));
  EXPECT_EQ(LostCount(trace), uint64_t{kWrittenStopped}) << trace;
}

INSTANTIATE_TEST_SUITE_P(DaemonLimitsTest, RingsOfAKilledDaemonTest, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& info) {
                           return info.param ? "OutgrownAfterItTookThem" : "UnansweredForAll";
                         });

// A ring the thread outgrew stays mapped only until its daemon has drained
// it: the daemon then frees its memory, and the thread's next pages let
// it go.
TEST_F(DaemonLimitsTest, AnOutgrownRingIsLetGoOnceDrained) {
  auto consumer = StartDaemonEnabling({"--ring-kb", "64", "--ring-max-kb", "256"}, "grown");
  const StepPipes pipes;
  ASSERT_TRUE(pipes.to_child);
  const auto& [from_child, to_parent, from_parent, to_child] = pipes;
  constexpr int kWrittenStopped = 6000;  // outgrows 64 KiB
  ChildAs producer(kUser, kGroup, [&]() -> std::string {
    setenv("UDIAG_DIR", dir_.c_str(), 1);
    static SeqWriter writer;
    if (std::string err = writer.Register("grown"); !err.empty()) return err;
    if (int err = writer.WriteOne()) return "first write " + Errno(err);
    if (!Tell(to_parent, 'e') || !Heard(from_parent, 's')) return "no stop";
    if (int err = writer.WriteMany(kWrittenStopped)) return "write while stopped " + Errno(err);
    const int rings_grown = RingMappings();
    const int resident_grown = RingResidentKb(68);
    if (!Tell(to_parent, 'w') || !Heard(from_parent, 'd')) return "not drained";
    // Drained, the outgrown ring keeps only its header page in memory, even
    // before this thread lets it go.
    PollUntil([] { return RingResidentKb(68) <= 4; });
    const int resident_drained = RingResidentKb(68);
    // Pages opened after the drain: the outgrown ring goes at the first.
    if (int err = writer.WriteMany(1000)) return "write after the drain " + Errno(err);
    return std::to_string(rings_grown) + " rings mapped, " + std::to_string(resident_grown) + " KiB then " +
           std::to_string(resident_drained) + " KiB of the outgrown one resident; then " +
           std::to_string(RingMappings());
  });
  ASSERT_TRUE(Heard(from_child, 'e')) << producer.Result();
  ASSERT_TRUE(PollUntil([&] {
    auto read = consumer.Read("trace");
    return read.ok() && SeqsOf(*read, "grown").size() == 1;
  }));
  ASSERT_EQ(kill(daemon_.pid(), SIGSTOP), 0);
  ASSERT_TRUE(Tell(to_child, 's'));
  const bool wrote = Heard(from_child, 'w');
  ASSERT_EQ(kill(daemon_.pid(), SIGCONT), 0);
  ASSERT_TRUE(wrote) << producer.Result();
  std::string trace;
  EXPECT_TRUE(PollUntil([&] {
    auto read = consumer.Read("trace");
    trace = read.ok() ? *read : "";
    return SeqsOf(trace, "grown").size() == 1 + kWrittenStopped;
  })) << LostCount(trace)
      << " lost";
  ASSERT_TRUE(Tell(to_child, 'd'));
  EXPECT_EQ(producer.Result(), "2 rings mapped, 68 KiB then 4 KiB of the outgrown one resident; then 1");
}

// A ring filled while its daemon was stopped drops writes and counts them
// in the ring. Those the daemon took into its trace before it was killed
// stay with it; the next daemon is told of the rest, with the events the
// ring still held, and of nothing twice.
TEST_F(DaemonLimitsTest, RingDropsADaemonKilledHadNotTakenAreCountedLostOnce) {
  const std::vector<std::string> rings = {"--ring-kb", "64", "--ring-max-kb", "64"};
  auto before = StartDaemonEnabling(rings, "dropped");
  const StepPipes pipes;
  ASSERT_TRUE(pipes.to_child);
  const auto& [from_child, to_parent, from_parent, to_child] = pipes;
  // 16-byte events: 64 KiB hold about 4,000, so each round drops about 2,000.
  constexpr int kWrittenPerRound = 6000;
  ChildAs producer(kUser, kGroup, [&]() -> std::string {
    setenv("UDIAG_DIR", dir_.c_str(), 1);
    static SeqWriter writer;
    if (std::string err = writer.Register("dropped"); !err.empty()) return err;
    for (char round : {'1', '2'}) {
      if (!Tell(to_parent, round) || !Heard(from_parent, 's')) return "no stop";
      if (int err = writer.WriteMany(kWrittenPerRound)) return "write while stopped " + Errno(err);
    }
    return writer.WriteOnceMoreAfterRestart(pipes);
  });
  // Round 1: the daemon, stopped, then let go, takes in all of it.
  ASSERT_TRUE(Heard(from_child, '1')) << producer.Result();
  ASSERT_EQ(kill(daemon_.pid(), SIGSTOP), 0);
  ASSERT_TRUE(Tell(to_child, 's'));
  const bool heard = Heard(from_child, '2');
  ASSERT_EQ(kill(daemon_.pid(), SIGCONT), 0);
  ASSERT_TRUE(heard) << producer.Result();
  uint64_t kept_first = 0, lost_first = 0;
  ASSERT_TRUE(PollUntil([&] {
    auto read = before.Read("trace");
    const std::string trace = read.ok() ? *read : "";
    kept_first = SeqsOf(trace, "dropped").size();
    lost_first = LostCount(trace);
    return kept_first + lost_first == kWrittenPerRound;
  })) << "kept "
      << kept_first << ", lost " << lost_first;
  ASSERT_GT(lost_first, 0u) << "round 1 did not fill the ring";
  // Round 2: stopped again, then killed.
  ASSERT_EQ(kill(daemon_.pid(), SIGSTOP), 0);
  ASSERT_TRUE(Tell(to_child, 's'));
  std::string trace;
  ASSERT_NO_FATAL_FAILURE(
      RestartForChild(rings, "dropped", pipes, producer, 2 * kWrittenPerRound + 1, &trace));
  EXPECT_EQ(LostCount(trace), uint64_t{kWrittenPerRound})
      << "round 1 kept " << kept_first << ", lost " << lost_first;
}

TEST_F(DaemonLimitsTest, OutOfFdsTheDaemonDoesNotSpinAndKeepsServing) {
  StartDaemon({});
  auto kept = MustConnect(dir_);
  ASSERT_TRUE(kept.Read("user_events_status").ok());
  // Leave the daemon a few fds, then take them with connections.
  const pid_t pid = daemon_.pid();
  rlimit tight;
  ASSERT_EQ(prlimit(pid, RLIMIT_NOFILE, nullptr, &tight), 0);
  tight.rlim_cur = OpenFds(pid) + 4;
  ASSERT_EQ(prlimit(pid, RLIMIT_NOFILE, &tight, nullptr), 0) << strerror(errno);
  std::vector<consumer::ConsumerClient> held;
  for (int i = 0; i < 32; ++i) {
    auto client = consumer::ConsumerClient::Connect(dir_);
    if (!client.ok()) break;
    held.push_back(std::move(client).value());
  }
  ASSERT_LT(held.size(), 32u) << "the daemon never ran out of fds";
  // A connection the daemon cannot keep is accepted and closed (the
  // reserve fd), not left pending to wake it up again and again.
  auto pending = base::ConnectSeqpacket(base::ControlSocketPath(dir_));
  ASSERT_TRUE(pending.ok());
  pollfd p{pending->get(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  char byte;
  EXPECT_LE(recv(pending->get(), &byte, 1, MSG_DONTWAIT), 0);
  // While more clients keep trying, the daemon stays mostly idle.
  const uint64_t ticks_before = CpuTicks(pid);
  for (int i = 0; i < 100; ++i) {
    auto attempt = base::ConnectSeqpacket(base::ControlSocketPath(dir_));
    std::this_thread::sleep_for(10ms);
  }
  const uint64_t ticks = CpuTicks(pid) - ticks_before;
  EXPECT_LT(ticks, sysconf(_SC_CLK_TCK) / 2) << "the daemon spun for " << ticks << " ticks in about 1 s";
  // Clients already in are served; the episode is logged once.
  EXPECT_TRUE(kept.Read("user_events_status").ok());
  EXPECT_EQ(CountLines(ReadFileText(log_), "refusing new connections until fds are free"), 1) << ReadFileText(log_);
  // With fds back, new clients get in again.
  held.clear();
  EXPECT_TRUE(PollUntil([&] { return consumer::ConsumerClient::Connect(dir_).ok(); }));
}

}  // namespace
}  // namespace udiag::integration
