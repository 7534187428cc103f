// Sustained load on a private udiagd: one producer thread writes 32-byte
// events as fast as it can for N seconds while a consumer streams trace_pipe
// (ftrace text). Reports what was written, what the daemon took in, what the
// reader received, what was reported lost, the daemon's peak RSS, and the
// latency from writing "1"/"0" to an event's `enable` until the producer's
// enable bit follows (p50/p99 over 200 flips).
//
// Usage: sustained_bench [seconds]   (or $UDIAG_SUSTAINED_SECONDS; default 10)
// Output: "key value" lines, one per number, for run_bench.sh to parse.
// Performance is measured, never asserted; the exit status is non-zero only
// when the run itself could not be made.
#include <sys/uio.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_daemon.h"
#include "udiag/udiag.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr char kName[] = "bench_sustained";
constexpr uint8_t kBit = 0;

struct Payload {
  uint64_t a, b, c, d;
};

// Peak resident set (VmHWM) of `pid`, in kB; -1 if unreadable.
long VmHwmKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

// "# entries-in-buffer/entries-written: E/W   #P:n" from the `trace` text.
bool ParseTraceHeader(const std::string& text, uint64_t* entries, uint64_t* written) {
  size_t at = text.find("entries-in-buffer/entries-written:");
  if (at == std::string::npos) return false;
  return std::sscanf(text.c_str() + at, "entries-in-buffer/entries-written: %" SCNu64 "/%" SCNu64, entries,
                     written) == 2;
}

// Sums "[LOST N EVENTS]" markers in a chunk of text.
uint64_t LostIn(const std::string& line) {
  size_t at = line.find("[LOST ");
  if (at == std::string::npos) return 0;
  return std::strtoull(line.c_str() + at + 6, nullptr, 10);
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10;
  if (const char* env = std::getenv("UDIAG_SUSTAINED_SECONDS")) seconds = std::atof(env);
  if (argc > 1) seconds = std::atof(argv[1]);
  if (seconds <= 0) seconds = 10;

  std::string error;
  auto daemon = udiag::bench::BenchDaemon::Start(&error);
  if (!daemon) {
    std::fprintf(stderr, "sustained_bench: %s\n", error.c_str());
    return 1;
  }
  int fd = udiag_open();
  if (fd < 0) {
    std::fprintf(stderr, "sustained_bench: udiag_open: %s\n", std::strerror(errno));
    return 1;
  }
  alignas(8) static uint32_t enable_word = 0;
  std::string command = std::string(kName) + " u64 a; u64 b; u64 c; u64 d";
  user_reg reg{};
  reg.size = sizeof(reg);
  reg.enable_bit = kBit;
  reg.enable_size = 4;
  reg.enable_addr = reinterpret_cast<uintptr_t>(&enable_word);
  reg.name_args = reinterpret_cast<uintptr_t>(command.c_str());
  if (udiag_ioctl(fd, DIAG_IOCSREG, &reg) < 0) {
    std::fprintf(stderr, "sustained_bench: DIAG_IOCSREG: %s\n", std::strerror(errno));
    return 1;
  }
  const uint32_t index = reg.write_index;
  auto bit_is = [&](bool on) { return ((__atomic_load_n(&enable_word, __ATOMIC_ACQUIRE) >> kBit) & 1) == on; };
  auto wait_bit = [&](bool on, Clock::duration limit) {
    auto deadline = Clock::now() + limit;
    while (!bit_is(on)) {
      if (Clock::now() > deadline) return false;
    }
    return true;
  };

  // --- sustained write + trace_pipe stream ---------------------------------
  if (int err = daemon->SetEnabled(kName, true)) {
    std::fprintf(stderr, "sustained_bench: enable: %s\n", std::strerror(err));
    return 1;
  }
  if (!wait_bit(true, std::chrono::seconds(5))) {
    std::fprintf(stderr, "sustained_bench: enable bit did not flip within 5 s\n");
    return 1;
  }

  std::atomic<bool> stop_pipe{false};
  std::atomic<uint64_t> pipe_lines{0}, pipe_event_lines{0}, pipe_lost{0}, pipe_bytes{0};
  int pipe_result = 0;
  std::thread reader([&] {
    std::string partial;
    uint64_t lines = 0, events = 0, lost = 0, bytes = 0;
    pipe_result = daemon->StreamPipe(
        "trace_pipe",
        [&](std::string_view chunk) {
          bytes += chunk.size();
          size_t start = 0;
          for (size_t nl; (nl = chunk.find('\n', start)) != std::string_view::npos; start = nl + 1) {
            partial.append(chunk.substr(start, nl - start));
            ++lines;
            if (partial.find(kName) != std::string::npos) ++events;
            lost += LostIn(partial);
            partial.clear();
          }
          partial.append(chunk.substr(start));
          return true;
        },
        &stop_pipe, 1000);
    pipe_lines = lines;
    pipe_event_lines = events;
    pipe_lost = lost;
    pipe_bytes = bytes;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the pipe attach

  uint64_t written = 0, failed = 0, skipped = 0;
  int last_errno = 0;
  Payload p{0, 1, 2, 3};
  iovec iov[2] = {{const_cast<uint32_t*>(&index), sizeof(index)}, {&p, sizeof(p)}};
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  for (;;) {
    for (int i = 0; i < 1024; ++i) {
      if (enable_word & (1u << kBit)) {
        if (udiag_writev(fd, iov, 2) < 0) {
          ++failed;
          last_errno = errno;
        } else {
          ++written;
        }
      } else {
        ++skipped;
      }
      ++p.a;
    }
    if (Clock::now() >= end) break;
  }
  const double write_secs = std::chrono::duration<double>(Clock::now() - t0).count();

  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let the daemon drain the rings
  stop_pipe = true;
  reader.join();
  const double total_secs = std::chrono::duration<double>(Clock::now() - t0).count();

  uint64_t entries = 0, entries_written = 0;
  std::string trace_text;
  bool have_header = daemon->Read("trace", &trace_text) == 0 && ParseTraceHeader(trace_text, &entries, &entries_written);
  uint64_t trace_lost = 0;
  {
    size_t pos = 0;
    while ((pos = trace_text.find("[LOST ", pos)) != std::string::npos) {
      trace_lost += std::strtoull(trace_text.c_str() + pos + 6, nullptr, 10);
      pos += 6;
    }
  }
  const long hwm_kb = VmHwmKb(daemon->pid());

  std::printf("sustained_seconds %.3f\n", write_secs);
  std::printf("written_events %" PRIu64 "\n", written);
  std::printf("write_failures %" PRIu64 "\n", failed);
  if (failed) std::printf("write_failure_errno %s\n", std::strerror(last_errno));
  std::printf("written_per_s %.0f\n", written / write_secs);
  std::printf("ns_per_write_sustained %.1f\n", write_secs * 1e9 / std::max<uint64_t>(written, 1));
  if (have_header) {
    std::printf("daemon_entries_written %" PRIu64 "\n", entries_written);
    std::printf("daemon_entries_in_buffer %" PRIu64 "\n", entries);
    std::printf("daemon_accepted_per_s %.0f\n", entries_written / write_secs);
    std::printf("not_reaching_daemon %" PRId64 "\n",
                static_cast<int64_t>(written) - static_cast<int64_t>(entries_written));
  } else {
    std::printf("daemon_entries_written unknown\n");
  }
  std::printf("pipe_result %s\n", pipe_result == 0 ? "ok" : std::strerror(pipe_result));
  std::printf("pipe_event_lines %" PRIu64 "\n", pipe_event_lines.load());
  std::printf("pipe_other_lines %" PRIu64 "\n", pipe_lines.load() - pipe_event_lines.load());
  std::printf("pipe_bytes %" PRIu64 "\n", pipe_bytes.load());
  std::printf("pipe_delivered_per_s %.0f\n", pipe_event_lines.load() / total_secs);
  std::printf("pipe_lost_reported %" PRIu64 "\n", pipe_lost.load());
  std::printf("trace_lost_reported %" PRIu64 "\n", trace_lost);
  std::printf("lost_total %" PRId64 "\n",
              static_cast<int64_t>(written) - static_cast<int64_t>(pipe_event_lines.load()));
  std::printf("daemon_vmhwm_kb %ld\n", hwm_kb);

  // --- enable propagation latency ------------------------------------------
  // From the start of the tree write until the producer sees the bit: the
  // consumer's round trip to the daemon plus the daemon -> agent-thread notice.
  std::vector<double> on_us, off_us;
  daemon->SetEnabled(kName, false);
  wait_bit(false, std::chrono::seconds(5));
  int timeouts = 0;
  for (int i = 0; i < 200; ++i) {
    const bool on = (i % 2) == 0;
    auto s = Clock::now();
    if (int err = daemon->SetEnabled(kName, on)) {
      std::fprintf(stderr, "sustained_bench: enable write: %s\n", std::strerror(err));
      return 1;
    }
    if (!wait_bit(on, std::chrono::seconds(2))) {
      ++timeouts;
      continue;
    }
    double us = std::chrono::duration<double, std::micro>(Clock::now() - s).count();
    (on ? on_us : off_us).push_back(us);
  }
  std::vector<double> all(on_us);
  all.insert(all.end(), off_us.begin(), off_us.end());
  std::printf("enable_latency_us_p50 %.1f\n", Percentile(all, 0.5));
  std::printf("enable_latency_us_p99 %.1f\n", Percentile(all, 0.99));
  std::printf("enable_on_latency_us_p50 %.1f\n", Percentile(on_us, 0.5));
  std::printf("disable_latency_us_p50 %.1f\n", Percentile(off_us, 0.5));
  std::printf("enable_latency_timeouts %d\n", timeouts);

  udiag_close(fd);
  return 0;
}
