// Fuzzes the CTF reader (`udiag convert` of a CTF trace): the metadata (its
// model comment and TSDL) and one data stream file.
//
// Input: the metadata text, a NUL, then the stream file's bytes.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "fuzz/trace_reader_drain.h"
#include "record/ctf/ctf_reader.h"

namespace {

void WriteFile(const std::string& path, const uint8_t* data, size_t size) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, data, size) != static_cast<ssize_t>(size)) abort();
  close(fd);
}

// One directory per process, rewritten for every input and removed when
// libFuzzer exits.
class TraceDirectory {
 public:
  TraceDirectory() {
    char pattern[] = "/tmp/udiag-ctf-fuzz.XXXXXX";
    if (mkdtemp(pattern) == nullptr) abort();
    path_ = pattern;
  }
  ~TraceDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const std::string& TraceDir() {
  static const TraceDirectory dir;
  return dir.path();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = std::min(input.find('\0'), size);
  const size_t stream_at = std::min(nul + 1, size);
  WriteFile(TraceDir() + "/metadata", data, nul);
  WriteFile(TraceDir() + "/stream_0", data + stream_at, size - stream_at);
  auto reader = udiag::record::ctf::OpenCtfReader(TraceDir());
  if (reader.ok()) udiag::fuzz::DrainTraceReader(**reader);
  return 0;
}
