// A udiagd of our own, in a fresh temporary directory, for as long as this
// object lives: what `udiag trace` uses when no daemon is running, and what
// tests use to get an isolated tracing domain.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

namespace udiag::consumer {

class PrivateDaemon {
 public:
  // Starts `udiagd --dir <new temporary directory>` as a child and waits until
  // it accepts connections. The binary is taken from next to this program's
  // executable, else from $UDIAG_BIN_DIR, else from $PATH. On failure returns
  // null and puts a sentence saying why in `*error`.
  //
  // The daemon is also killed if the thread that started it dies without
  // running the destructor (PR_SET_PDEATHSIG), so start it from the thread
  // that owns the object.
  static std::unique_ptr<PrivateDaemon> Start(std::string* error);

  // Stops the daemon (SIGTERM; SIGKILL if it lingers), reaps it and removes
  // its directory.
  ~PrivateDaemon();

  PrivateDaemon(const PrivateDaemon&) = delete;
  PrivateDaemon& operator=(const PrivateDaemon&) = delete;

  // Pass to ConsumerClient::Connect, or export as $UDIAG_DIR to producers.
  const std::string& dir() const { return dir_; }
  pid_t pid() const { return pid_; }

 private:
  explicit PrivateDaemon(std::string dir) : dir_(std::move(dir)) {}

  // Empty on success, else why the daemon is not serving.
  std::string WaitUntilServing();

  std::string dir_;
  pid_t pid_ = 0;  // 0 once reaped
};

}  // namespace udiag::consumer
