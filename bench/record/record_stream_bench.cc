// Record-stream throughput: one producer thread writes 32-byte events as
// fast as it can for N seconds into an instance owned by a record session
// (default sizes everywhere); a recorder thread reads the instance's binary
// record stream (consumer::RecordStream) and writes every record to a file.
// Reports events written, received, reported lost and missing (seq gaps not
// covered by a loss report), and the rates.
//
// Usage: record_stream_bench [seconds] [output file] [events/s]
//   defaults: 5, /tmp/record_stream_bench.bin, 0 = as fast as the thread can
//   (a rate paces the producer in batches of 1024, sleeping between them)
// Output: "key value" lines. Performance is measured, never asserted; the
// exit status is non-zero only when the run itself could not be made.
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "bench_daemon.h"
#include "consumer/consumer_client.h"
#include "consumer/record_stream.h"
#include "udiag/udiag.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr char kName[] = "bench_record";

struct Payload {
  uint64_t seq, b, c, d;
};

// Writes records to a file and checks the seq of each against the last.
class FileSink : public udiag::consumer::RecordSink {
 public:
  explicit FileSink(FILE* out) : out_(out) {}
  void OnEventType(const udiag::record::EventType&) override { ++types; }
  void OnTask(const udiag::record::Task&) override { ++tasks; }
  void OnRecord(const udiag::record::Record& record) override {
    std::fwrite(record.data.data(), 1, record.data.size(), out_);
    bytes += record.data.size();
    lost += record.lost_before;
    Payload p;
    std::memcpy(&p, record.data.data() + 8, sizeof(p));
    if (p.seq > next_seq) gaps += p.seq - next_seq;
    next_seq = p.seq + 1;
    ++received;
  }
  void OnLost(uint64_t count) override { lost += count; }

  uint64_t types = 0, tasks = 0, received = 0, lost = 0, gaps = 0, bytes = 0, next_seq = 0;

 private:
  FILE* out_;
};

// CPU time (user + system) `pid` has used, in seconds; thread `tid` of it if non-zero.
double CpuSeconds(pid_t pid, pid_t tid = 0) {
  std::string path = "/proc/" + std::to_string(pid) + (tid ? "/task/" + std::to_string(tid) : "") + "/stat";
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return 0;
  char buf[1024] = {};
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* p = std::strrchr(buf, ')');  // fields after the comm
  unsigned long utime = 0, stime = 0;
  if (!p || std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2) return 0;
  return static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK);
}

int Fail(const char* what, int err) {
  std::fprintf(stderr, "record_stream_bench: %s: %s\n", what, std::strerror(err));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 5;
  if (seconds <= 0) seconds = 5;
  std::string path = argc > 2 ? argv[2] : "/tmp/record_stream_bench.bin";
  double rate = argc > 3 ? std::atof(argv[3]) : 0;

  std::string error;
  auto daemon = udiag::bench::BenchDaemon::Start(&error);
  if (!daemon) {
    std::fprintf(stderr, "record_stream_bench: %s\n", error.c_str());
    return 1;
  }
  // The session: an owned instance enabling the event, and its stream.
  auto session = udiag::consumer::ConsumerClient::Connect(daemon->dir());
  if (!session.ok()) return Fail("connect", session.error());
  if (int err = session->Mkdir("instances/rec", /*owned=*/true)) return Fail("mkdir", err);
  if (int err = session->AutoEnable(kName, "rec")) return Fail("auto-enable", err);
  auto stream = udiag::consumer::RecordStream::Open(daemon->dir(), "rec");
  if (!stream.ok()) return Fail("record stream", stream.error());
  FILE* out = std::fopen(path.c_str(), "wb");
  if (!out) return Fail(path.c_str(), errno);
  static char file_buffer[1 << 20];
  std::setvbuf(out, file_buffer, _IOFBF, sizeof(file_buffer));

  int fd = udiag_open();
  if (fd < 0) return Fail("udiag_open", errno);
  alignas(8) static uint32_t enable_word = 0;
  std::string command = std::string(kName) + " u64 seq; u64 b; u64 c; u64 d";
  user_reg reg{};
  reg.size = sizeof(reg);
  reg.enable_bit = 0;
  reg.enable_size = 4;
  reg.enable_addr = reinterpret_cast<uintptr_t>(&enable_word);
  reg.name_args = reinterpret_cast<uintptr_t>(command.c_str());
  if (udiag_ioctl(fd, DIAG_IOCSREG, &reg) < 0) return Fail("DIAG_IOCSREG", errno);
  auto deadline = Clock::now() + std::chrono::seconds(5);
  while (!(__atomic_load_n(&enable_word, __ATOMIC_ACQUIRE) & 1)) {
    if (Clock::now() > deadline) return Fail("enable", ETIMEDOUT);
  }

  FileSink sink(out);
  std::atomic<bool> producing{true};
  int stream_result = 0;
  std::atomic<pid_t> recorder_tid{0};
  double recorder_cpu = 0;
  const double daemon_cpu_before = CpuSeconds(daemon->pid());
  std::thread recorder([&] {
    recorder_tid = static_cast<pid_t>(syscall(SYS_gettid));
    // After the producer stops, read until the stream has been quiet a while.
    auto quiet_since = Clock::now();
    for (;;) {
      int err = (*stream)->Poll(50, sink);
      if (err == 0) {
        quiet_since = Clock::now();
      } else if (err != ETIMEDOUT) {
        stream_result = err;
        break;
      }
      if (!producing && Clock::now() - quiet_since > std::chrono::milliseconds(500)) break;
    }
    recorder_cpu = CpuSeconds(getpid(), recorder_tid);
  });

  uint64_t written = 0, failed = 0;
  Payload p{0, 1, 2, 3};
  iovec iov[2] = {{&reg.write_index, sizeof(reg.write_index)}, {&p, sizeof(p)}};
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  do {
    for (int i = 0; i < 1024; ++i) {
      if (udiag_writev(fd, iov, 2) < 0) {
        ++failed;
      } else {
        ++written;
      }
      ++p.seq;
    }
    if (rate > 0) std::this_thread::sleep_until(t0 + std::chrono::duration_cast<Clock::duration>(
                                                          std::chrono::duration<double>((written + failed) / rate)));
  } while (Clock::now() < end);
  const double write_secs = std::chrono::duration<double>(Clock::now() - t0).count();
  producing = false;
  recorder.join();
  const double total_secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const double daemon_cpu = CpuSeconds(daemon->pid()) - daemon_cpu_before;
  std::fclose(out);

  std::printf("seconds %.3f\n", write_secs);
  std::printf("written_events %" PRIu64 "\n", written);
  std::printf("write_failures %" PRIu64 "\n", failed);
  std::printf("written_per_s %.0f\n", written / write_secs);
  std::printf("received_events %" PRIu64 "\n", sink.received);
  std::printf("received_per_s %.0f\n", sink.received / total_secs);
  std::printf("received_mb_per_s %.1f\n", sink.bytes / total_secs / 1e6);
  std::printf("reported_lost %" PRIu64 "\n", sink.lost);
  std::printf("missing_unreported %" PRId64 "\n",
              static_cast<int64_t>(written + failed) - static_cast<int64_t>(sink.received + sink.lost));
  std::printf("seq_gaps %" PRIu64 "\n", sink.gaps);
  // CPU per delivered event does not depend on how busy the machine is.
  std::printf("daemon_cpu_seconds %.3f\n", daemon_cpu);
  std::printf("recorder_cpu_seconds %.3f\n", recorder_cpu);
  if (sink.received) {
    std::printf("daemon_ns_per_written_event %.1f\n", daemon_cpu * 1e9 / (written + 1));
    std::printf("recorder_ns_per_received_event %.1f\n", recorder_cpu * 1e9 / sink.received);
  }
  std::printf("stream_result %s\n", stream_result ? std::strerror(stream_result) : "ok");
  return 0;
}
