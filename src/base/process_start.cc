#include "base/process_start.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/scoped_fd.h"
#include "base/tsc.h"

namespace udiag::base {
namespace {

uint64_t BoottimeNs() {
  timespec ts;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Field 22 of /proc/PID/stat, in clock ticks since boot (suspend included).
bool StartTicks(pid_t pid, uint64_t* ticks) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  ScopedFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  char text[1024];
  const ssize_t n = ::read(fd.get(), text, sizeof text - 1);
  if (n <= 0) return false;
  text[n] = '\0';
  // The command name may hold spaces and parentheses: count from its end.
  const char* at = std::strrchr(text, ')');
  if (!at) return false;
  for (int field = 2; field < 22; ++field) {
    at = std::strchr(at + 1, ' ');
    if (!at) return false;
  }
  char* end;
  *ticks = std::strtoull(at + 1, &end, 10);
  return end != at + 1;
}

}  // namespace

uint64_t ProcessStartNs(pid_t pid) {
  uint64_t ticks;
  const long hz = ::sysconf(_SC_CLK_TCK);
  if (hz <= 0 || !StartTicks(pid, &ticks)) return 0;
  const uint64_t started_boot_ns = ticks * (1'000'000'000u / static_cast<uint64_t>(hz));
  // Now in both clocks: the monotonic one stood still while suspended.
  const uint64_t monotonic = MonotonicNs(), boottime = BoottimeNs();
  const uint64_t ago = boottime > started_boot_ns ? boottime - started_boot_ns : 0;
  return monotonic > ago ? monotonic - ago : 0;
}

}  // namespace udiag::base
