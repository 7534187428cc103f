#include "base/daemon_dir.h"

#include <unistd.h>

#include <cstdlib>

namespace udiag::base {

std::string ResolveDaemonDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("UDIAG_DIR"); env && *env) return env;
  if (geteuid() == 0) return "/run/udiag";
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg) return std::string(xdg) + "/udiag";
  return "/tmp/udiag-" + std::to_string(geteuid());
}

std::string ControlSocketPath(const std::string& dir) { return dir + "/control.sock"; }
std::string LockFilePath(const std::string& dir) { return dir + "/udiagd.pid"; }

}  // namespace udiag::base
