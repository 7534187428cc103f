#include "producer/user_memory.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace udiag::producer {

int CopyFromUser(void* dst, uint64_t addr, size_t n) {
  if (n == 0) return 0;
  iovec local{dst, n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  return got == static_cast<ssize_t>(n) ? 0 : EFAULT;
}

int CopyToUser(uint64_t addr, const void* src, size_t n) {
  iovec local{const_cast<void*>(src), n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  ssize_t put = process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
  return put == static_cast<ssize_t>(n) ? 0 : EFAULT;
}

int CopyStringFromUser(uint64_t addr, size_t max, std::string* out) {
  out->clear();
  long page = sysconf(_SC_PAGESIZE);
  while (out->size() < max) {
    // Never read across a page we were not asked to touch.
    size_t to_page_end = page - (addr % page);
    size_t n = std::min(to_page_end, max - out->size());
    char buf[4096];
    if (n > sizeof(buf)) n = sizeof(buf);
    if (CopyFromUser(buf, addr, n)) return EFAULT;
    if (const void* nul = memchr(buf, '\0', n)) {
      out->append(buf, static_cast<const char*>(nul) - buf);
      return 0;
    }
    out->append(buf, n);
    addr += n;
  }
  return EINVAL;
}

bool IsWritable(uint64_t addr, size_t n) {
  FILE* maps = fopen("/proc/self/maps", "re");
  if (!maps) return false;
  uint64_t end = addr + n;
  bool ok = false;
  char line[512];
  while (fgets(line, sizeof(line), maps)) {
    unsigned long long lo, hi;
    char perms[5];
    if (sscanf(line, "%llx-%llx %4s", &lo, &hi, perms) != 3) continue;
    if (addr >= lo && end <= hi) {
      ok = perms[1] == 'w';
      break;
    }
  }
  fclose(maps);
  return ok;
}

}  // namespace udiag::producer
