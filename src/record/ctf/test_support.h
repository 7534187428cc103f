// Helpers for the CTF tests: scratch directories and running the real
// babeltrace2 / python3-bt2 on a trace.
#pragma once

#include <string>
#include <vector>

namespace udiag::record::ctf {

// A fresh directory under $TMPDIR (or /tmp), removed with its files.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct CommandResult {
  int exit_code = -1;  // -1 if it did not exit normally
  std::string out;
  std::string err;
};

// Runs argv[0] (looked up in PATH) with the arguments, capturing both outputs.
CommandResult RunCommand(const std::vector<std::string>& argv);

std::string ReadFileText(const std::string& path);

}  // namespace udiag::record::ctf
