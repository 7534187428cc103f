#include "cli/recover_command.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>

#include "cli/cli_support.h"
#include "record/ctf/ctf_recover.h"
#include "record/perfetto/perfetto_recover.h"
#include "record/trace_files.h"
#include "record/tracedat/recover.h"

namespace udiag::cli {

namespace {

// Says what cutting a torn last packet did (CTF and Perfetto): `err` the
// cut's result, `cut` the bytes that went, `not_ours` why EINVAL.
int ReportCut(const std::string& path, int err, uint64_t cut, std::string_view not_ours) {
  if (err == EINVAL) {
    fmt::print(stderr, "udiag recover: {}: {}\n", path, not_ours);
    return kExitFailure;
  }
  if (err) return Fail(path, err);
  if (cut == 0) {
    fmt::print(stderr, "udiag recover: {}: every packet is whole; nothing to do\n", path);
  } else {
    fmt::print(stderr, "udiag recover: {}: cut {} bytes of a torn last packet; the trace is complete\n", path,
               cut);
  }
  return 0;
}

}  // namespace

int Recover(const std::string& path) {
  struct stat st {};
  uint64_t cut = 0;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    const int err = record::ctf::CutTornPackets(path, &cut);
    return ReportCut(path, err, cut, "not a CTF trace written by udiag record (no metadata)");
  }
  if (record::TraceFormatOf(path) == record::TraceFormat::kPerfetto) {
    const int err = record::CutTornPerfettoPacket(path, &cut);
    return ReportCut(path, err, cut,
                     "not a Perfetto trace written by udiag record (or damaged before its end)");
  }
  record::tracedat::Recovery recovery;
  int err = record::tracedat::RecoverTraceDat(path, &recovery);
  if (err == EINVAL) {
    fmt::print(stderr, "udiag recover: {}: not a trace.dat written by udiag record, or its header and the header's copy are both lost\n",
               path);
    return kExitFailure;
  }
  if (err) return Fail(path, err);
  if (recovery.header_from_twin) fmt::print(stderr, "udiag recover: {}: the header was torn; restored it from its copy\n", path);
  if (!recovery.was_under_way) {
    fmt::print(stderr, "udiag recover: {}: a finished recording; nothing to do\n", path);
    return 0;
  }
  uint64_t bytes = 0;
  for (const auto& cpu : recovery.cpus) bytes += cpu.size;
  fmt::print(stderr, "udiag recover: {}: {:.1f} MB of pages kept ({} written after the last checkpoint found); the file is complete\n",
             path, bytes / 1e6, recovery.pages_found);
  return 0;
}

}  // namespace udiag::cli
