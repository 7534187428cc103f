// What ends a session that reads events (`trace`, `record`, `export`, `hist`): the
// COMMAND it runs exiting, or, without a command, SIGINT/SIGTERM.
#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace udiag::cli {

class SessionEnd {
 public:
  SessionEnd() = default;
  SessionEnd(const SessionEnd&) = delete;
  SessionEnd& operator=(const SessionEnd&) = delete;
  ~SessionEnd() { Finish(); }

  // Starts `command` (if not empty) with UDIAG_DIR set to `dir`, so that its
  // libudiag registers with the daemon the session reads, and sets up the
  // signals (termination_signals.h). Returns 0, or the status to exit with
  // when it cannot run (127 not found, 126 otherwise, as shells say), with
  // the message printed.
  int Start(const std::vector<std::string>& command, const std::string& dir);

  // Set once the session should end.
  const std::atomic<bool>& stop() const;

  // Waits for the command to exit; its exit status (0 without one).
  int Finish();

 private:
  bool has_command_ = false;
  std::atomic<bool> exited_{false};
  int status_ = 0;
  std::thread waiter_;
};

}  // namespace udiag::cli
