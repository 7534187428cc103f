#include "cli/session_end.h"

#include <stdlib.h>

#include <cerrno>

#include "cli/cli_support.h"
#include "cli/termination_signals.h"
#include "consumer/spawn.h"

namespace udiag::cli {

int SessionEnd::Start(const std::vector<std::string>& command, const std::string& dir) {
  if (command.empty()) {
    HandleTerminationSignals(0);
    return 0;
  }
  setenv("UDIAG_DIR", dir.c_str(), 1);
  auto pid = consumer::Spawn(command);
  if (!pid.ok()) {
    Fail("cannot run " + command[0], pid.error());
    return pid.error() == ENOENT ? 127 : 126;
  }
  HandleTerminationSignals(*pid);
  has_command_ = true;
  waiter_ = std::thread([this, pid = *pid] {
    status_ = consumer::WaitForExit(pid);
    exited_ = true;
  });
  return 0;
}

const std::atomic<bool>& SessionEnd::stop() const { return has_command_ ? exited_ : Interrupted(); }

int SessionEnd::Finish() {
  if (waiter_.joinable()) waiter_.join();
  return status_;
}

}  // namespace udiag::cli
