// The binary record stream (consumer::RecordStream): several consumers at
// once each get every event they asked for, with types and tasks first.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "consumer/private_daemon.h"
#include "consumer/record_stream.h"
#include "ipc/stream_ring.h"
#include "record/tracedat/page_decoder.h"
#include "integration_util.h"

namespace udiag::integration {
namespace {

// Checks the stream's ordering promises and collects the seq payloads.
class CheckingSink : public consumer::RecordSink {
 public:
  void OnEventType(const record::EventType& type) override { types_[type.id] = type; }
  void OnTask(const record::Task& task) override { tasks_[task.tid] = task; }
  void OnRecord(const record::Record& record) override {
    auto type = types_.find(record.event_id);
    if (type == types_.end()) {
      ++untyped_;
      return;
    }
    if (!tasks_.contains(record.tid)) ++without_task_;
    // Each thread's records come in time order (threads' are merged per drain round).
    uint64_t& last = last_timestamp_[record.tid];
    if (record.timestamp < last) ++out_of_order_;
    last = record.timestamp;
    lost_ += record.lost_before;
    uint32_t seq = 0;
    const schema::Field& field = type->second.fields.at(0);
    if (field.name != "seq" || record.data.size() < field.offset + sizeof(seq)) {
      ++malformed_;
      return;
    }
    std::memcpy(&seq, record.data.data() + field.offset, sizeof(seq));
    ++seqs_[type->second.name][seq];
  }
  void OnLost(uint64_t count) override { lost_ += count; }

  std::map<uint32_t, int> Seqs(const std::string& event) const {
    auto it = seqs_.find(event);
    return it == seqs_.end() ? std::map<uint32_t, int>{} : it->second;
  }
  const record::EventType* Type(const std::string& name) const {
    for (const auto& [_, type] : types_) {
      if (type.name == name) return &type;
    }
    return nullptr;
  }
  const std::map<uint32_t, record::Task>& tasks() const { return tasks_; }
  int untyped_ = 0, without_task_ = 0, out_of_order_ = 0, malformed_ = 0;
  uint64_t lost_ = 0;

 private:
  std::map<uint32_t, record::EventType> types_;
  std::map<uint32_t, record::Task> tasks_;
  std::map<std::string, std::map<uint32_t, int>> seqs_;
  std::map<uint32_t, uint64_t> last_timestamp_;  // by tid
};

// Polls `stream` into `sink` until `done` holds or 20 s pass.
bool PollStreamUntil(consumer::RecordStream& stream, CheckingSink& sink, const std::function<bool()>& done) {
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    int err = stream.Poll(100, sink);
    if (err != 0 && err != ETIMEDOUT) {
      ADD_FAILURE() << "Poll: " << strerror(err);
      return false;
    }
  }
  return true;
}

TEST(RecordStreamTest, InstancesPipesAndStreamsEachGetEveryEvent) {
  std::string error;
  auto daemon = consumer::PrivateDaemon::Start(&error);
  ASSERT_NE(daemon, nullptr) << error;
  const std::string dir = daemon->dir();
  auto control = MustConnect(dir);
  ASSERT_EQ(control.Write("dynamic_events", "u:alpha u32 seq", true), 0);
  ASSERT_EQ(control.Write("dynamic_events", "u:beta u32 seq", true), 0);
  // Instance a records alpha, instance b records alpha and beta, the top beta.
  ASSERT_EQ(control.Mkdir("instances/a"), 0);
  ASSERT_EQ(control.Mkdir("instances/b"), 0);
  ASSERT_EQ(control.Write("instances/a/set_event", "alpha", false), 0);
  ASSERT_EQ(control.Write("instances/b/events/user_events/enable", "1", false), 0);
  ASSERT_EQ(control.Write("events/user_events/beta/enable", "1", false), 0);

  auto stream_a = consumer::RecordStream::Open(dir, "a");
  ASSERT_TRUE(stream_a.ok()) << strerror(stream_a.error());
  auto stream_b = consumer::RecordStream::Open(dir, "b");
  ASSERT_TRUE(stream_b.ok()) << strerror(stream_b.error());
  EXPECT_EQ(consumer::RecordStream::Open(dir, "nope").error(), ENOENT);
  // A record stream keeps its instance busy; status names the record session.
  EXPECT_EQ(control.Rmdir("instances/a"), EBUSY);
  EXPECT_EQ(ReadTree(dir, "user_events_status"),
            "alpha # Used by ftrace record\nbeta # Used by ftrace record\n\nActive: 2\nBusy: 2\n");

  auto piper = MustConnect(dir);
  std::atomic<bool> stop{false};
  std::mutex text_mu;
  std::string text;
  auto text_so_far = [&] {
    std::lock_guard lock(text_mu);
    return text;
  };
  std::thread pipe_reader([&] {
    piper.StreamPipe("trace_pipe", [&](std::string_view chunk) {
      std::lock_guard lock(text_mu);
      text.append(chunk);
      return true;
    }, &stop, 500ms);
  });

  constexpr uint32_t kCount = 20000;
  pid_t alpha = StartProcess({Bin("hammer_producer"), "alpha", std::to_string(kCount), "5"}, {.udiag_dir = dir});
  pid_t beta = StartProcess({Bin("hammer_producer"), "beta", std::to_string(kCount), "5"}, {.udiag_dir = dir});
  CheckingSink sink_a, sink_b;
  // Both streams are read while the producers run, one after the other.
  auto all_in = [&] {
    return sink_a.Seqs("alpha").size() == kCount && sink_b.Seqs("alpha").size() == kCount &&
           sink_b.Seqs("beta").size() == kCount;
  };
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!all_in() && std::chrono::steady_clock::now() < deadline) {
    for (auto [stream, sink] : {std::pair{stream_a->get(), &sink_a}, std::pair{stream_b->get(), &sink_b}}) {
      int err = stream->Poll(10, *sink);
      ASSERT_TRUE(err == 0 || err == ETIMEDOUT) << strerror(err);
    }
  }
  EXPECT_EQ(WaitExit(alpha), 0);
  EXPECT_EQ(WaitExit(beta), 0);
  EXPECT_TRUE(PollUntil([&] { return SeqsOf(text_so_far(), "beta").size() == kCount; }, 10s));
  stop = true;
  pipe_reader.join();

  EXPECT_EQ(CheckExactlyOnce(sink_a.Seqs("alpha"), kCount), "");
  EXPECT_TRUE(sink_a.Seqs("beta").empty());
  EXPECT_EQ(CheckExactlyOnce(sink_b.Seqs("alpha"), kCount), "");
  EXPECT_EQ(CheckExactlyOnce(sink_b.Seqs("beta"), kCount), "");
  EXPECT_EQ(CheckExactlyOnce(SeqsOf(text, "beta"), kCount), "");
  EXPECT_TRUE(SeqsOf(text, "alpha").empty());
  for (const CheckingSink* sink : {&sink_a, &sink_b}) {
    EXPECT_EQ(sink->untyped_, 0);
    EXPECT_EQ(sink->without_task_, 0);
    EXPECT_EQ(sink->out_of_order_, 0);
    EXPECT_EQ(sink->malformed_, 0);
    EXPECT_EQ(sink->lost_, 0u);
  }
  // Types carry the fields; tasks the processes' pids and names.
  const record::EventType* type = sink_b.Type("beta");
  ASSERT_NE(type, nullptr);
  EXPECT_EQ(type->system, "user_events");
  ASSERT_EQ(type->fields.size(), 1u);
  EXPECT_EQ(type->fields[0].offset, 8u);
  std::set<uint32_t> pids;
  for (const auto& [tid, task] : sink_b.tasks()) {
    pids.insert(task.pid);
    EXPECT_EQ(task.comm, "hammer_producer");
  }
  EXPECT_EQ(pids, (std::set<uint32_t>{static_cast<uint32_t>(alpha), static_cast<uint32_t>(beta)}));

  // Closing a record stream makes its instance removable again.
  stream_a->reset();
  EXPECT_TRUE(PollUntil([&] { return control.Rmdir("instances/a") == 0; }));
}

// Decodes a page-mode stream: each event's seqs received, and the losses reported.
class PageSink : public consumer::RecordSink {
 public:
  void OnEventType(const record::EventType& type) override { names_[type.id] = type.name; }
  void OnTask(const record::Task&) override {}
  void OnRecord(const record::Record&) override { ++not_on_pages_; }
  void OnLost(uint64_t count) override { lost_ += count; }
  bool OnPage(uint16_t, std::span<const uint8_t> page, const consumer::PageCounts& counts) override {
    record::tracedat::DecodedPage decoded;
    if (record::tracedat::DecodePage(page, 8, &decoded) != 0 || decoded.records.size() != counts.events) return false;
    lost_ += decoded.lost_before;
    for (const record::tracedat::PageRecord& r : decoded.records) {
      uint16_t type;
      uint32_t seq;
      std::memcpy(&type, r.data.data(), sizeof(type));
      std::memcpy(&seq, r.data.data() + 8, sizeof(seq));
      ++seqs_[names_[type]][seq];
    }
    received_ += decoded.records.size();
    return true;
  }
  std::map<uint32_t, std::string> names_;
  std::map<std::string, std::map<uint32_t, int>> seqs_;  // by event name
  uint64_t received_ = 0;
  uint64_t lost_ = 0;
  int not_on_pages_ = 0;
};

// Reads `stream` until `sink` accounts for `count` events (kept or lost),
// or has every seq below `count` of `event` when one is named, or 30 s pass.
void ReadUntilAccounted(consumer::RecordStream& stream, PageSink& sink, uint64_t count,
                        const std::string& event = "") {
  auto deadline = std::chrono::steady_clock::now() + 30s;
  auto done = [&] {
    return event.empty() ? sink.received_ + sink.lost_ >= count : sink.seqs_[event].size() >= count;
  };
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    int err = stream.Poll(100, sink);
    ASSERT_TRUE(err == 0 || err == ETIMEDOUT) << strerror(err);
  }
}

// instances/rec, recording the events `first` and `second` ("u32 seq" each).
void MakeRecordingInstance(consumer::ConsumerClient& control, const std::string& first, const std::string& second) {
  ASSERT_EQ(control.Write("dynamic_events", "u:" + first + " u32 seq", true), 0);
  ASSERT_EQ(control.Write("dynamic_events", "u:" + second + " u32 seq", true), 0);
  ASSERT_EQ(control.Mkdir("instances/rec"), 0);
  ASSERT_EQ(control.Write("instances/rec/set_event", first, false), 0);
  ASSERT_EQ(control.Write("instances/rec/set_event", second, true), 0);
}

// A recorder that is its instance's only reader and the only consumer stops
// reading: once its stream is full the daemon leaves the producers' rings to
// their producers, which drop and count. When it reads again the recording
// goes on, and every event written was either recorded once or counted lost.
using StalledRecorderTest = PrivateDaemonTest;

TEST_F(StalledRecorderTest, LosesNothingUncountedAndGoesOnWhenItReads) {
  const std::string& dir = dir_;
  ASSERT_NO_FATAL_FAILURE(MakeRecordingInstance(*client_, "flood", "paced"));
  auto stream = consumer::RecordStream::Open(dir, "rec", true);
  ASSERT_TRUE(stream.ok()) << strerror(stream.error());

  // Far more than the stream's ring and pool and the producer's ring (64 MiB
  // at most) hold, unread: 160 MB of records.
  constexpr uint32_t kFlood = 10000000;
  ASSERT_EQ(RunProgram({Bin("hammer_producer"), "flood", std::to_string(kFlood)}, {.udiag_dir = dir}, 60s), 0);
  // Reading again, while a paced producer writes: its events all arrive,
  // and the flood's losses come on the pages after them (a partly filled
  // page goes out after RecordStreamSender::kPageFlushNs).
  constexpr uint32_t kPaced = 2000;
  pid_t paced = StartProcess({Bin("hammer_producer"), "paced", std::to_string(kPaced), "20"}, {.udiag_dir = dir});
  PageSink sink;
  ReadUntilAccounted(**stream, sink, kFlood + kPaced);
  EXPECT_EQ(WaitExit(paced), 0);

  EXPECT_EQ(sink.not_on_pages_, 0);
  EXPECT_GT(sink.lost_, 0u) << "the flood did not overflow anything";
  EXPECT_EQ(sink.received_ + sink.lost_, uint64_t{kFlood} + kPaced)
      << "received " << sink.received_ << ", lost " << sink.lost_;
  EXPECT_EQ(CheckExactlyOnce(sink.seqs_["paced"], kPaced), "");
  for (const auto& [seq, times] : sink.seqs_["flood"]) ASSERT_EQ(times, 1) << "flood seq " << seq;
}

// A recorder may write into its stream's memfd, pool pages included,
// while the daemon checks producers' pages there: it garbles only its own
// recording. The daemon stays up, and the next honest recording of the
// same instance gets every event.
TEST_F(StalledRecorderTest, ARecorderScribblingOverThePoolHurtsOnlyItself) {
  ASSERT_NO_FATAL_FAILURE(MakeRecordingInstance(*client_, "scribbled", "honest"));
  {
    auto hostile = consumer::ConsumerClient::Connect(dir_);
    ASSERT_TRUE(hostile.ok());
    auto fds = hostile->OpenRecordStream("rec", /*pages=*/true);
    ASSERT_TRUE(fds.ok()) << strerror(fds.error());
    auto ring = ipc::StreamRing::Map(base::ScopedFd(dup(fds->ring.get())));
    ASSERT_TRUE(ring.ok());
    ASSERT_GT((*ring)->pool_pages(), 0u);
    struct stat st;
    ASSERT_EQ(fstat(fds->ring.get(), &st), 0);
    void* whole = mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds->ring.get(), 0);
    ASSERT_NE(whole, MAP_FAILED);
    const uint64_t pool_bytes = (*ring)->pool_pages() * ipc::StreamRing::kPoolPageSize;
    uint8_t* const pool = static_cast<uint8_t*>(whole) + st.st_size - pool_bytes;
    std::atomic<bool> done{false};
    std::thread scribbler([&] {
      uint64_t x = 88172645463325252ull;
      while (!done.load()) {
        for (int i = 0; i < 4096; ++i) {  // xorshift: words anywhere in the pool
          x ^= x << 13, x ^= x >> 7, x ^= x << 17;
          std::memcpy(pool + (x % (pool_bytes / 8)) * 8, &x, sizeof(x));
        }
        // And reads on, so that the daemon keeps lending pool pages.
        (*ring)->Release((*ring)->Readable().size());
      }
    });
    EXPECT_EQ(RunProgram({Bin("hammer_producer"), "scribbled", "300000"}, {.udiag_dir = dir_}, 60s), 0);
    done.store(true);
    scribbler.join();
    munmap(whole, st.st_size);
  }
  EXPECT_FALSE(ReadTree(dir_, "user_events_status").empty()) << "the daemon went down";

  auto stream = consumer::RecordStream::Open(dir_, "rec", true);
  ASSERT_TRUE(stream.ok()) << strerror(stream.error());
  constexpr uint32_t kHonest = 100000;
  ASSERT_EQ(RunProgram({Bin("hammer_producer"), "honest", std::to_string(kHonest)}, {.udiag_dir = dir_}, 60s), 0);
  // The scribbled events the hostile recorder left behind may be counted
  // lost on this stream; the honest ones must all come.
  PageSink sink;
  ReadUntilAccounted(**stream, sink, kHonest, "honest");
  EXPECT_EQ(CheckExactlyOnce(sink.seqs_["honest"], kHonest), "");
}

// A recording whose records wait in its instance's buffer (a records-mode
// stream, as `udiag export` reads) stops reading while a producer writes a
// burst its ring holds. The daemon stops draining the ring while an eighth
// of the buffer is still free, rather than fill the buffer and drop the
// rest of a round there; what it left waits in the ring, and once the
// recording reads again every event arrives, none lost or dropped.
TEST_F(StalledRecorderTest, ARecordReaderThatStopsLosesNothingItsProducersRingHolds) {
  ASSERT_NO_FATAL_FAILURE(MakeRecordingInstance(*client_, "burst", "unused"));
  ASSERT_EQ(client_->Write("instances/rec/buffer_size_kb", "256", false), 0);
  auto stream = consumer::RecordStream::Open(dir_, "rec");
  ASSERT_TRUE(stream.ok()) << strerror(stream.error());
  // More records than the stream's ring (8 MiB) and the buffer take, and
  // fewer events than the producer's ring (4 MiB, 16 bytes each) holds.
  constexpr uint32_t kBurst = 200000;
  ASSERT_EQ(RunProgram({Bin("hammer_producer"), "burst", std::to_string(kBurst)}, {.udiag_dir = dir_}, 60s),
            0);
  std::this_thread::sleep_for(500ms);  // the daemon has taken what it will
  // One buffer per instance, so its stats are cpu0's.
  const std::string stats = Read("instances/rec/per_cpu/cpu0/stats");
  const size_t at = stats.find("dropped events: ");
  ASSERT_NE(at, std::string::npos) << stats;
  EXPECT_EQ(std::stoull(stats.substr(at + 16)), 0u) << "dropped into the full buffer of a stopped recording";
  CheckingSink sink;
  EXPECT_TRUE(PollStreamUntil(**stream, sink, [&] { return sink.Seqs("burst").size() == kBurst; }));
  EXPECT_EQ(CheckExactlyOnce(sink.Seqs("burst"), kBurst), "");
  EXPECT_EQ(sink.lost_, 0u);
}

TEST(RecordStreamTest, OwnedInstanceRemovalEndsTheStream) {
  std::string error;
  auto daemon = consumer::PrivateDaemon::Start(&error);
  ASSERT_NE(daemon, nullptr) << error;
  auto session = std::make_unique<consumer::ConsumerClient>(MustConnect(daemon->dir()));
  ASSERT_EQ(session->Mkdir("instances/rec", /*owned=*/true), 0);
  ASSERT_EQ(session->AutoEnable("user_events:ended", "rec"), 0);
  auto stream = consumer::RecordStream::Open(daemon->dir(), "rec");
  ASSERT_TRUE(stream.ok()) << strerror(stream.error());
  ASSERT_EQ(RunProgram({Bin("hammer_producer"), "ended", "100"}, {.udiag_dir = daemon->dir()}), 0);
  CheckingSink sink;
  ASSERT_TRUE(PollStreamUntil(**stream, sink, [&] { return sink.Seqs("ended").size() == 100; }));
  EXPECT_EQ(CheckExactlyOnce(sink.Seqs("ended"), 100), "");

  session.reset();  // the owner goes: the instance and its stream end
  int err = 0;
  for (int i = 0; i < 100 && err != EPIPE; ++i) err = (*stream)->Poll(100, sink);
  EXPECT_EQ(err, EPIPE);
  EXPECT_EQ(ReadTree(daemon->dir(), "user_events_status"), "\nActive: 0\nBusy: 0\n");
}

}  // namespace
}  // namespace udiag::integration
