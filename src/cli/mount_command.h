// `udiag mount DIR` and `udiag umount DIR`: the daemon's tree as a FUSE
// filesystem. See docs/cli.md.
#pragma once

#include <string>

namespace udiag::cli {

// Mounts the tree of the daemon at `dir` (resolved) on `mountpoint`; in the
// background unless `foreground`. Returns the exit status.
int MountTree(const std::string& dir, const std::string& mountpoint, bool foreground);

// Unmounts `mountpoint`. Returns the exit status.
int UnmountTree(const std::string& mountpoint);

}  // namespace udiag::cli
