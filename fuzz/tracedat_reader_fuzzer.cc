// Fuzzes the trace.dat reader (`udiag report`, `udiag convert`): opening
// checks the whole file, then every record is read.
//
// Input: the file.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "record/tracedat/tracedat_reader.h"
#include "fuzz/trace_reader_drain.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("fuzz.dat", MFD_CLOEXEC);
  if (fd < 0 || write(fd, data, size) != static_cast<ssize_t>(size)) abort();
  auto reader = udiag::record::OpenTraceDatReader("/proc/self/fd/" + std::to_string(fd));
  close(fd);
  if (reader.ok()) udiag::fuzz::DrainTraceReader(**reader);
  return 0;
}
