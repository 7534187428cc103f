// The daemon's tracefs tree as a FUSE filesystem (`udiag mount`): files can
// be used with echo, cat, >> and > as on /sys/kernel/tracing. See docs/cli.md.
#pragma once

#include <string>

#include "consumer/consumer_client.h"

namespace udiag::fuse {

struct MountOptions {
  std::string mountpoint;  // an existing directory
  std::string daemon_dir;  // the daemon's directory, already resolved
  bool foreground = false;
};

// Mounts the tree of the daemon `client` is connected to on
// options.mountpoint and serves it. In the foreground it serves until the
// mount goes away (`udiag umount`, SIGINT, SIGTERM) and returns. In the
// background (the default) it never returns on success: once the mount is in
// place the calling process exits with status 0 (fuse_daemonize) and a
// detached child serves — so call it from a process that has nothing else to
// do, as `udiag mount` and `udiag run` (one child per mountpoint) do. Either
// way the server unmounts the directory and exits when its connection to the
// daemon breaks. On failure returns an errno and puts a sentence in `*error`.
int Mount(consumer::ConsumerClient client, const MountOptions& options, std::string* error);

// Unmounts `mountpoint` (lazily if it is busy); works whether or not its
// server or the daemon is still alive. Returns 0 or an errno, with `*error`.
int Unmount(const std::string& mountpoint, std::string* error);

}  // namespace udiag::fuse
