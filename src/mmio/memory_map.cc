#include "mmio/memory_map.h"

#include <sys/mman.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace udiag::mmio {

bool ParseMapsLine(const std::string& line, Mapping* out) {
  char perms[5] = {};
  unsigned long long start, end, offset, inode;
  unsigned major_id, minor_id;
  int path_at = 0;
  if (sscanf(line.c_str(), "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end, perms, &offset, &major_id,
             &minor_id, &inode, &path_at) != 7 ||
      strlen(perms) != 4) {
    return false;
  }
  out->start = start;
  out->end = end;
  out->prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
              (perms[2] == 'x' ? PROT_EXEC : 0);
  out->shared = perms[3] == 's';
  out->offset = offset;
  out->device = makedev(major_id, minor_id);
  out->inode = inode;
  out->path = path_at > 0 ? line.substr(std::min<size_t>(path_at, line.size())) : std::string();
  if (!out->path.empty() && out->path.back() == '\n') out->path.pop_back();
  return true;
}

base::ErrorOr<std::vector<Mapping>> ReadMemoryMap() {
  FILE* file = fopen("/proc/self/maps", "re");
  if (file == nullptr) return base::Errno{errno};
  std::vector<Mapping> maps;
  char* line = nullptr;
  size_t capacity = 0;
  while (getline(&line, &capacity, file) >= 0) {
    Mapping mapping;
    if (ParseMapsLine(line, &mapping)) maps.push_back(std::move(mapping));
  }
  free(line);
  fclose(file);
  return maps;
}

const Mapping* FindMapping(const std::vector<Mapping>& maps, uintptr_t addr) {
  auto it = std::upper_bound(maps.begin(), maps.end(), addr,
                             [](uintptr_t a, const Mapping& m) { return a < m.start; });
  if (it == maps.begin()) return nullptr;
  --it;
  return addr < it->end ? &*it : nullptr;
}

}  // namespace udiag::mmio
