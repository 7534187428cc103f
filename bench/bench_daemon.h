// A private udiagd for a benchmark process, with a control connection to its
// tree (enable/disable, reads).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace udiag::bench {

class BenchDaemon {
 public:
  // Starts udiagd in a fresh directory, exports it as $UDIAG_DIR and connects
  // a consumer to it. Null with `*error` set on failure.
  static std::unique_ptr<BenchDaemon> Start(std::string* error);
  ~BenchDaemon();

  pid_t pid() const;
  const std::string& dir() const;

  // Writes (">") / reads a path of the tree; 0 or an errno value.
  int Write(const std::string& path, std::string_view text);
  int Read(const std::string& path, std::string* out);
  // Convenience: events/user_events/<name>/enable.
  int SetEnabled(const std::string& event_name, bool on);

  // Streams `path` (a trace_pipe) on a NEW connection until `*stop` and then
  // `drain_ms` of quiet; 0 or an errno value.
  int StreamPipe(const std::string& path, const std::function<bool(std::string_view)>& on_chunk,
                 const std::atomic<bool>* stop, int drain_ms);

 private:
  struct Impl;
  explicit BenchDaemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace udiag::bench
