// Where a tracing domain's daemon lives: its directory, socket and lock file.
#pragma once

#include <string>

namespace udiag::base {

// The directory a daemon or client uses: `flag` if non-empty, else $UDIAG_DIR,
// else /run/udiag for root, else $XDG_RUNTIME_DIR/udiag (or /tmp/udiag-<uid>
// when XDG_RUNTIME_DIR is unset).
std::string ResolveDaemonDir(const std::string& flag);

std::string ControlSocketPath(const std::string& dir);
std::string LockFilePath(const std::string& dir);

}  // namespace udiag::base
