#include "record/trace_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "record/ctf/ctf_reader.h"
#include "record/ctf/ctf_writer.h"
#include "record/perfetto/perfetto_writer.h"
#include "record/tracedat/tracedat_reader.h"
#include "record/tracedat/tracedat_writer.h"

namespace udiag::record {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The first bytes of a trace.dat: 0x17 0x08 0x44 "tracing".
bool HasTraceDatMagic(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char head[10] = {};
  bool yes = read(fd, head, sizeof head) == sizeof head && memcmp(head, "\x17\x08\x44tracing", 10) == 0;
  close(fd);
  return yes;
}

// Perfetto traces start with field 1 (packet), length-delimited: 0x0a.
bool LooksLikePerfetto(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char first = 0;
  bool yes = read(fd, &first, 1) == 1 && first == 0x0a;
  close(fd);
  return yes;
}

}  // namespace

std::optional<TraceFormat> ParseTraceFormat(std::string_view name) {
  if (name == "dat") return TraceFormat::kTraceDat;
  if (name == "ctf") return TraceFormat::kCtf;
  if (name == "perfetto") return TraceFormat::kPerfetto;
  return std::nullopt;
}

std::string_view TraceFormatName(TraceFormat format) {
  switch (format) {
    case TraceFormat::kTraceDat: return "dat";
    case TraceFormat::kCtf: return "ctf";
    case TraceFormat::kPerfetto: return "perfetto";
  }
  return "dat";
}

TraceFormat FormatForOutput(const std::string& path) {
  if (EndsWith(path, ".pftrace") || EndsWith(path, ".perfetto-trace")) return TraceFormat::kPerfetto;
  if (EndsWith(path, ".ctf") || IsDirectory(path)) return TraceFormat::kCtf;
  return TraceFormat::kTraceDat;
}

base::ErrorOr<std::unique_ptr<TraceWriter>> OpenTraceWriter(TraceFormat format, const std::string& path) {
  switch (format) {
    case TraceFormat::kTraceDat: return OpenTraceDatWriter(path);
    case TraceFormat::kCtf: return ctf::OpenCtfWriter(path);
    case TraceFormat::kPerfetto: return OpenPerfettoWriter(path);
  }
  return base::Errno{EINVAL};
}

std::optional<TraceFormat> TraceFormatOf(const std::string& path) {
  if (IsDirectory(path)) {
    if (access((path + "/metadata").c_str(), R_OK) == 0) return TraceFormat::kCtf;
    return std::nullopt;
  }
  if (HasTraceDatMagic(path)) return TraceFormat::kTraceDat;
  if (LooksLikePerfetto(path)) return TraceFormat::kPerfetto;
  return std::nullopt;
}

base::ErrorOr<std::unique_ptr<TraceReader>> OpenTraceReader(const std::string& path) {
  if (!IsDirectory(path) && access(path.c_str(), R_OK) != 0) return base::Errno{errno};
  const std::optional<TraceFormat> format = TraceFormatOf(path);
  if (!format) return base::Errno{EINVAL};
  switch (*format) {
    case TraceFormat::kTraceDat:
      return OpenTraceDatReader(path);
    case TraceFormat::kCtf:
      return ctf::OpenCtfReader(path);
    case TraceFormat::kPerfetto:
      return base::Errno{ENOTSUP};
  }
  return base::Errno{EINVAL};
}

}  // namespace udiag::record
