#include "mmio/alias_view.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/scoped_fd.h"

namespace udiag::mmio {
namespace {

bool SameFile(int fd, const Mapping& mapping) {
  struct stat st;
  return fstat(fd, &st) == 0 && st.st_ino == mapping.inode && st.st_dev == mapping.device;
}

base::ScopedFd OpenMapFile(const Mapping& mapping, int flags) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", static_cast<unsigned long>(mapping.start),
           static_cast<unsigned long>(mapping.end));
  return base::ScopedFd(open(path, flags | O_CLOEXEC));
}

base::ScopedFd OpenByPath(const Mapping& mapping, int flags) {
  if (mapping.path.empty() || mapping.path[0] != '/') return {};
  base::ScopedFd fd(open(mapping.path.c_str(), flags | O_CLOEXEC));
  return fd && SameFile(fd.get(), mapping) ? std::move(fd) : base::ScopedFd();
}

// A memfd or unlinked file is still reachable through a descriptor the program holds.
base::ScopedFd OpenByOpenDescriptor(const Mapping& mapping, int flags) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return {};
  base::ScopedFd found;
  while (dirent* entry = readdir(dir)) {
    char* end;
    long fd = strtol(entry->d_name, &end, 10);
    if (*end != '\0' || fd == dirfd(dir) || !SameFile(static_cast<int>(fd), mapping)) continue;
    found.Reset(open(("/proc/self/fd/" + std::string(entry->d_name)).c_str(), flags | O_CLOEXEC));
    if (found) break;
  }
  closedir(dir);
  return found;
}

}  // namespace

AliasView::~AliasView() { munmap(alias_, len_); }

base::ErrorOr<std::unique_ptr<AliasView>> MapAliasView(uintptr_t virt, size_t len, int fd, off_t offset) {
  int access_mode = fcntl(fd, F_GETFL);
  if (access_mode < 0) return base::Errno{errno};
  int prot = (access_mode & O_ACCMODE) == O_RDONLY ? PROT_READ : PROT_READ | PROT_WRITE;
  void* alias = mmap(nullptr, len, prot, MAP_SHARED, fd, offset);
  if (alias == MAP_FAILED) return base::Errno{errno};
  return std::make_unique<AliasView>(virt, len, static_cast<uint8_t*>(alias));
}

base::ErrorOr<std::unique_ptr<AliasView>> FindAliasView(const Mapping& mapping) {
  if (!mapping.shared || mapping.inode == 0) return base::Errno{ENOTSUP};
  const int flags = mapping.prot & PROT_WRITE ? O_RDWR : O_RDONLY;
  base::ScopedFd fd = OpenMapFile(mapping, flags);
  if (!fd) fd = OpenByPath(mapping, flags);
  if (!fd) fd = OpenByOpenDescriptor(mapping, flags);
  if (!fd) return base::Errno{ENOTSUP};
  return MapAliasView(mapping.start, mapping.end - mapping.start, fd.get(),
                      static_cast<off_t>(mapping.offset));
}

}  // namespace udiag::mmio
