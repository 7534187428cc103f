#include "base/proc_stat.h"

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

}  // namespace

bool ProcStatFields(pid_t pid, std::string* fields) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  ScopedFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  char text[1024];
  const ssize_t n = ::read(fd.get(), text, sizeof text - 1);
  if (n <= 0) return false;
  text[n] = '\0';
  const char* name_end = std::strrchr(text, ')');
  if (!name_end) return false;
  fields->assign(name_end + 1 + (name_end[1] == ' '));
  return true;
}

uint64_t ProcessStartNs(pid_t pid) {
  // Field 22, the 20th after the name: clock ticks since boot (suspend included).
  std::string fields;
  const long hz = ::sysconf(_SC_CLK_TCK);
  if (hz <= 0 || !ProcStatFields(pid, &fields)) return 0;
  const char* at = fields.c_str();
  for (int field = 3; field < 22; ++field) {
    at = std::strchr(at, ' ');
    if (!at) return 0;
    ++at;
  }
  char* end;
  const uint64_t ticks = std::strtoull(at, &end, 10);
  if (end == at) return 0;
  const uint64_t started_boot_ns = ticks * (1'000'000'000u / static_cast<uint64_t>(hz));
  // Now in both clocks: the monotonic one stood still while suspended.
  const uint64_t monotonic = MonotonicNs(), boottime = BoottimeNs();
  const uint64_t ago = boottime > started_boot_ns ? boottime - started_boot_ns : 0;
  return monotonic > ago ? monotonic - ago : 0;
}

}  // namespace udiag::base
