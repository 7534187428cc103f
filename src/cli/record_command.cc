#include "cli/record_command.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <thread>

#include "base/errno_name.h"
#include "cli/cli_support.h"
#include "cli/recording_sink.h"
#include "cli/session_end.h"
#include "consumer/private_daemon.h"
#include "consumer/record_stream.h"

namespace udiag::cli {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kPollMs = 100;
// Events reach the stream within a few ms of being written; once the command
// has ended, this much silence means its last events have arrived...
constexpr milliseconds kDrainQuiet{300};
// ...but a producer that never stops must not keep us waiting.
constexpr milliseconds kDrainLimit{3000};
// After a poll that brought less than this of events, wait a little before the next:
// waking for every small batch costs more than the batch (a context switch
// each); the daemon's instance buffer holds what arrives meanwhile.
constexpr uint64_t kSmallPollBytes = 64 << 10;
constexpr std::chrono::microseconds kNap{1000};

// How often the file is made to survive our being killed (a checkpoint
// costs a header write): a kill loses at most this much of the recording.
constexpr milliseconds kCheckpointEvery{250};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// What the file says about the whole trace, as far as it is known now.
record::TraceInfo CurrentInfo(const RecordingSink& sink) {
  record::TraceInfo info;
  info.cpus = std::max<uint32_t>(sink.cpus(), static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF)));
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  info.hostname = host;
  info.lost_at_end = sink.trailing_lost();
  return info;
}

// Checkpoints the writer every kCheckpointEvery; remembers the first error.
class Checkpoints {
 public:
  Checkpoints(record::TraceWriter& writer, const RecordingSink& sink) : writer_(writer), sink_(sink) {}
  void Tick() {
    auto now = Clock::now();
    if (error_ != 0 || now - last_ < kCheckpointEvery) return;
    last_ = now;
    error_ = writer_.Checkpoint(CurrentInfo(sink_));
  }
  int error() const { return error_; }

 private:
  record::TraceWriter& writer_;
  const RecordingSink& sink_;
  Clock::time_point last_ = Clock::now();
  int error_ = 0;
};

class ProgressLine {
 public:
  explicit ProgressLine(const RecordingSink& sink) : sink_(sink), shown_(isatty(STDERR_FILENO)) {}
  ~ProgressLine() {
    if (drawn_) fmt::print(stderr, "\n");
  }
  void Update() {
    if (!shown_) return;
    auto now = Clock::now();
    if (now - last_ < milliseconds(500)) return;
    double rate = (sink_.events() - last_events_) / Seconds(now - last_);
    fmt::print(stderr, "\r\033[Kudiag record: {} events, {:.1f} MB, {:.0f} events/s, {} lost", sink_.events(),
               sink_.bytes() / 1e6, rate, sink_.lost());
    drawn_ = true;
    last_ = now;
    last_events_ = sink_.events();
  }

 private:
  const RecordingSink& sink_;
  bool shown_;
  bool drawn_ = false;
  Clock::time_point last_ = Clock::now();
  uint64_t last_events_ = 0;
};

// Streams until `stop` is set, then until the stream has been quiet for
// kDrainQuiet (at most kDrainLimit). 0 or an errno.
int Stream(consumer::RecordStream& stream, RecordingSink& sink, ProgressLine& progress, Checkpoints& checkpoints,
           const std::atomic<bool>& stop) {
  Clock::time_point stopped{}, quiet_since{};
  for (;;) {
    bool stopping = stop.load();
    if (stopping && stopped == Clock::time_point{}) stopped = quiet_since = Clock::now();
    uint64_t before = sink.bytes();  // of events: a pool page's frame is only 32 bytes of stream
    // Until stopped, the daemon need not wake us for every batch: we come
    // back every kPollMs anyway (at 4 M events/s a wake-up per daemon turn
    // cost us 5 ns an event; dozing, 0.5).
    int err = stream.Poll(kPollMs, sink, /*doze=*/!stopping);
    progress.Update();
    checkpoints.Tick();
    if (checkpoints.error()) return checkpoints.error();
    if (err == EPIPE) return 0;
    if (err && err != ETIMEDOUT) return err;
    if (!stopping) {
      if (!err && sink.bytes() - before < kSmallPollBytes) std::this_thread::sleep_for(kNap);
      continue;
    }
    auto now = Clock::now();
    if (!err) quiet_since = now;
    if (now - quiet_since >= kDrainQuiet || now - stopped >= kDrainLimit) return 0;
  }
}

// Hands the stream whatever is still buffered (nothing new is coming).
// When the daemon writes the file, until it says every page is on disk
// (a disk may take a while to take the last blocks; kDrainLimit at most).
int DrainRest(consumer::RecordStream& stream, RecordingSink& sink) {
  const auto limit = Clock::now() + kDrainLimit;
  for (;;) {
    int err = stream.Poll(kPollMs, sink);
    if (err == EPIPE) return 0;
    if (err == ETIMEDOUT && (!stream.writes_file() || sink.file_synced() || Clock::now() > limit)) return 0;
    if (err && err != ETIMEDOUT) return err;
  }
}

// "name: N" from the instance's per_cpu/cpu0/stats text; 0 when absent.
uint64_t StatsValue(std::string_view stats, std::string_view name) {
  size_t at = stats.find(fmt::format("\n{}: ", name));
  if (at == std::string_view::npos) return 0;
  return std::strtoull(stats.data() + at + name.size() + 3, nullptr, 10);
}

// Says where the losses happened and what would have kept them. With
// --block, losses mean the recording stopped reading for longer than it.
// When the daemon writes the file, what it drops waited for the disk (or
// for this recorder's counting, far behind).
void PrintLossBreakdown(consumer::ConsumerClient& control, const std::string& instance_path, uint32_t block_ms,
                        bool daemon_writes_file) {
  auto stats = control.Read(instance_path + "/per_cpu/cpu0/stats");
  if (!stats.ok()) return;
  std::string text = "\n" + *stats;
  uint64_t in_rings = StatsValue(text, "lost in producer rings");
  // Of those, the daemon left the rings alone while the file's pages waited for the disk.
  uint64_t disk_behind =
      std::min(in_rings, StatsValue(text, "lost in producer rings while the disk was behind"));
  uint64_t dropped = StatsValue(text, "dropped events");
  uint64_t overwritten = StatsValue(text, "overrun");
  std::string remedy = block_ms ? fmt::format("the recording stopped reading for over {} ms; --block=MS waits longer", block_ms)
                                : std::string("--block waits instead of dropping");
  if (in_rings > disk_behind) {
    fmt::print(stderr,
               "udiag record: {} lost in producers' rings, not drained in time (a larger udiagd --ring-kb "
               "holds more; so do a --ring-max-kb that was lowered, and a larger --max-ring-mb-per-user, "
               "half of which the largest rings may take; {})\n",
               in_rings - disk_behind, remedy);
  }
  if (disk_behind) {
    fmt::print(stderr,
               "udiag record: {} lost in producers' rings while the daemon's pages waited for the disk "
               "(--size over 98304 holds more; {})\n",
               disk_behind, remedy);
  }
  if (dropped && daemon_writes_file) {
    fmt::print(stderr, "udiag record: {} dropped while the daemon's pages waited for the disk (--size over 98304 holds more; {})\n",
               dropped, remedy);
  } else if (dropped) {
    fmt::print(stderr, "udiag record: {} dropped by the recording's full buffer, not read in time (--size holds more; {})\n",
               dropped, remedy);
  }
  if (overwritten) {
    fmt::print(stderr, "udiag record: {} overwritten by newer events (flight recorder; --size keeps more)\n",
               overwritten);
  }
}

struct Session {
  std::string dir;
  std::unique_ptr<consumer::PrivateDaemon> private_daemon;  // outlives the client
  std::optional<consumer::ConsumerClient> control;
  std::string instance;
  std::string path;  // "instances/<instance>"
};

int StartSession(const RecordOptions& options, Session* session) {
  session->dir = options.dir;
  auto client = ConnectOrStartPrivate(&session->dir, "recording", &session->private_daemon);
  if (!client.ok()) return kExitFailure;
  session->control.emplace(std::move(client).value());
  session->instance = fmt::format("record-{}", getpid());
  session->path = "instances/" + session->instance;
  // Owned by this connection: it goes away with us, however we end.
  if (int err = session->control->Mkdir(session->path, /*owned=*/true)) return Fail("mkdir " + session->path, err);
  std::string size_file = session->path + "/buffer_size_kb";
  if (int err = session->control->Write(size_file, std::to_string(options.size_kb), false)) return Fail(size_file, err);
  if (options.overwrite) {
    std::string file = session->path + "/options/overwrite";
    if (int err = session->control->Write(file, "1", false)) return Fail(file, err);
  }
  if (options.block_ms > 0) {
    std::string file = session->path + "/blocking_timeout_ms";
    if (int err = session->control->Write(file, std::to_string(options.block_ms), false)) return Fail(file, err);
  }
  return EnableEvents(*session->control, options.events, options.filters, session->instance);
}

}  // namespace

int Record(const RecordOptions& options) {
  Session session;
  if (int status = StartSession(options, &session)) return status;
  record::TraceFormat format = options.format.value_or(record::FormatForOutput(options.output));
  auto writer = record::OpenTraceWriter(format, options.output);
  if (!writer.ok()) return Fail(options.output, writer.error());
  RecordingSink sink(writer->get());
  ProgressLine progress(sink);
  Checkpoints checkpoints(**writer, sink);

  std::unique_ptr<consumer::RecordStream> stream;
  // The stream brings pages, so that the daemon checks pages, not records:
  // trace.dat stores them as they come; for CTF and Perfetto, RecordingSink
  // reads their records, each cpu's in time order, which a CTF stream and a
  // Perfetto packet sequence per cpu need. Where the file system gives
  // trace.dat its cpu regions, the daemon writes the pages into them
  // itself, and we only count them.
  std::optional<record::TraceWriter::PageRegions> regions = (*writer)->RegionsForPages();
  std::optional<consumer::ConsumerClient::PageFile> page_file;
  if (regions) page_file = consumer::ConsumerClient::PageFile{regions->fd, regions->region_bytes, regions->cpus};
  auto open_stream = [&]() -> int {
    auto opened = consumer::RecordStream::Open(session.dir, session.instance, /*pages=*/true,
                                               page_file ? &*page_file : nullptr);
    if (!opened.ok()) return Fail("record stream", opened.error());
    stream = std::move(opened).value();
    return 0;
  };
  // A flight recorder keeps its newest events in the daemon until the end.
  if (!options.overwrite && open_stream()) return kExitFailure;

  auto started = Clock::now();
  SessionEnd session_end;
  if (int status = session_end.Start(options.command, session.dir)) return status;
  const std::atomic<bool>& stop = session_end.stop();

  int err = 0;
  if (stream) {
    err = Stream(*stream, sink, progress, checkpoints, stop);
  } else {
    while (!stop.load()) std::this_thread::sleep_for(milliseconds(kPollMs));
    std::this_thread::sleep_for(kDrainQuiet);  // the command's last events
  }
  // Freeze the instance, then take what it still holds.
  if (!err) err = session.control->Write(session.path + "/tracing_on", "0", false);
  if (!err && !stream) err = open_stream() ? EIO : 0;
  if (!err) err = DrainRest(*stream, sink);
  if (err && err != checkpoints.error()) {
    // The daemon went away (or the stream broke): what arrived is still
    // written out as a whole file; what the daemon held is gone, uncounted.
    fmt::print(stderr, "udiag record: the recording ended early: {}; keeping the {} events received\n",
               base::DescribeErrno(err), sink.events());
  }
  if (uint64_t unwritten = sink.CountUnwrittenAsLost()) {
    fmt::print(
        stderr,
        "udiag record: {} events were in pages the daemon had not written yet: they are not in the file, "
        "and are counted lost\n",
        unwritten);
  }

  int finish = (*writer)->Finish(CurrentInfo(sink));
  // The command keeps running after an early end; its exit still ends us.
  int status = session_end.Finish();
  if (finish && format == record::TraceFormat::kTraceDat) {
    // A full disk (or a write error) stops the file growing; what was on
    // disk by then stays readable.
    fmt::print(stderr, "udiag record: {}: {}; the file keeps every page written before that (of {} events received)\n",
               options.output, base::DescribeErrno(finish), sink.events());
    return kExitFailure;
  }
  if (finish) return Fail(options.output, finish);

  double secs = Seconds(Clock::now() - started);
  fmt::print(stderr, "udiag record: {} events ({:.1f} MB) in {:.1f} s, {} lost -> {} ({})\n", sink.events(),
             sink.bytes() / 1e6, secs, sink.lost(), options.output, record::TraceFormatName(format));
  if (sink.lost()) PrintLossBreakdown(*session.control, session.path, options.block_ms, stream && stream->writes_file());
  if (sink.restamped()) {
    fmt::print(stderr, "udiag record: {} events committed late were stamped with the time before them\n",
               sink.restamped());
  }
  fmt::print(stderr, "{}", sink.Summary());
  return err ? kExitFailure : status;
}

}  // namespace udiag::cli
