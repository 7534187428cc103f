#include "service/kernel_event_ids.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <charconv>

#include "base/scoped_fd.h"

namespace udiag::service {
namespace {

constexpr long kTracefsMagic = 0x74726163;  // include/uapi/linux/magic.h

// Calls `fn(name)` for each subdirectory of `dir`.
template <typename Fn>
void ForEachSubdirectory(const std::string& dir, Fn fn) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* entry = readdir(d)) {
    if (entry->d_type != DT_DIR || entry->d_name[0] == '.') continue;
    fn(std::string(entry->d_name));
  }
  closedir(d);
}

bool ReadId(const std::string& path, uint32_t* id) {
  base::ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  char buf[32];
  ssize_t n = read(fd.get(), buf, sizeof buf);
  if (n <= 0) return false;
  auto [end, ec] = std::from_chars(buf, buf + n, *id);
  return ec == std::errc() && end != buf;
}

}  // namespace

std::string RealTracefsRoot() {
  for (const char* root : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
    struct statfs fs;
    if (statfs(root, &fs) == 0 && fs.f_type == kTracefsMagic) return root;
  }
  return {};
}

std::vector<uint32_t> TracepointIdsUnder(const std::string& root) {
  std::vector<uint32_t> ids;
  std::string events = root + "/events";
  ForEachSubdirectory(events, [&](const std::string& system) {
    ForEachSubdirectory(events + "/" + system, [&](const std::string& event) {
      uint32_t id;
      if (ReadId(events + "/" + system + "/" + event + "/id", &id)) ids.push_back(id);
    });
  });
  return ids;
}

}  // namespace udiag::service
