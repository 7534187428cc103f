#include "cli/mount_command.h"

#include <fmt/format.h>

#include "cli/cli_support.h"
#include "fuse/fuse_mount.h"

namespace udiag::cli {

int MountTree(const std::string& dir, const std::string& mountpoint, bool foreground) {
  auto client = ConnectOrExplain(dir);
  if (!client.ok()) return kExitFailure;
  fuse::MountOptions options;
  options.mountpoint = mountpoint;
  options.daemon_dir = dir;
  options.foreground = foreground;
  std::string error;
  if (int err = fuse::Mount(std::move(client).value(), options, &error)) {
    fmt::print(stderr, "udiag: mount: {}\n", error);
    (void)err;
    return kExitFailure;
  }
  return 0;
}

int UnmountTree(const std::string& mountpoint) {
  std::string error;
  if (fuse::Unmount(mountpoint, &error)) {
    fmt::print(stderr, "udiag: umount: {}\n", error);
    return kExitFailure;
  }
  return 0;
}

}  // namespace udiag::cli
