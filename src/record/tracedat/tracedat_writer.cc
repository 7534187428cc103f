#include "record/tracedat/tracedat_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cerrno>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "base/scoped_fd.h"
#include "record/tracedat/byte_io.h"
#include "record/tracedat/cpu_spool.h"
#include "record/tracedat/fd_io.h"
#include "record/tracedat/tracedat_layout.h"
#include "schema/event_description.h"

namespace udiag::record {
namespace {

using tracedat::BlockWriter;
using tracedat::ByteAppender;
using tracedat::CpuSpool;

std::string DirectoryOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void PutSizedText64(ByteAppender& out, std::string_view text) {
  out.Put<uint64_t>(text.size());
  out.PutBytes(text);
}

void PutOption(ByteAppender& out, uint16_t id, std::string_view data) {
  out.Put<uint16_t>(id);
  out.Put<uint32_t>(static_cast<uint32_t>(data.size()));
  out.PutBytes(data);
}

std::string TemporaryDirectory() {
  const char* dir = std::getenv("TMPDIR");
  return dir && *dir ? dir : "/tmp";
}

// "sysname nodename release machine" as trace-cmd stores it, with the
// recorded host's name.
std::string UnameText(const std::string& hostname) {
  struct utsname host {};
  ::uname(&host);
  return fmt::format("{} {} {} {}", host.sysname, hostname, host.release, host.machine);
}

// The trace_clock file's text with `clock` selected.
std::string ClockText(const std::string& clock) { return "[" + clock + "]\n"; }

class TraceDatWriter : public TraceWriter {
 public:
  TraceDatWriter(base::ScopedFd out, std::string directory)
      : out_(std::move(out)), directory_(std::move(directory)), seekable_(IsReadableRegularFile(out_.get())) {
    if (seekable_) BlockWriter::PreferDirectIo(out_.get());
  }
  // Queued writes name the spools' descriptors: they finish before those close.
  ~TraceDatWriter() override { blocks_.Wait(); }

  void AddEventType(const EventType& type) override { types_.push_back(type); }

  void AddTask(const Task& task) override {
    for (Task& known : tasks_) {
      if (known.tid == task.tid) {
        known = task;
        return;
      }
    }
    tasks_.push_back(task);
  }

  void Write(const Record& record) override {
    if (CpuSpool* spool = SpoolOf(record.cpu)) spool->Add(record.timestamp, record.lost_before, record.data);
  }

  bool WritePage(uint16_t cpu, std::span<const uint8_t> page) override {
    if (page.size() != tracedat::kPageSize) return false;
    if (CpuSpool* spool = SpoolOf(cpu)) spool->AddPage(page);
    return true;
  }

  int Finish(const TraceInfo& info) override {
    uint64_t lost_at_end = info.lost_at_end;
    for (std::unique_ptr<CpuSpool>& spool : cpus_) {
      if (!spool) continue;
      spool->Flush();
      lost_at_end += spool->lost_at_end();
    }
    if (int error = blocks_.Wait(); error != 0 && error_ == 0) error_ = error;
    if (error_ != 0) return error_;
    uint32_t cpu_count = std::max<uint32_t>(info.cpus, static_cast<uint32_t>(cpus_.size()));
    cpus_.resize(cpu_count);

    std::string header = Header(info, cpu_count, lost_at_end);
    std::vector<uint64_t> offsets = DataOffsets(header.size());
    int error = seekable_ ? PlaceDataAfter(header.size(), offsets) : AppendData(header);
    if (error == 0) error = blocks_.Wait();
    if (error == 0 && seekable_) error = WriteHeaderAtStart(header);
    if (error != 0) return error;
    if (::close(out_.Release()) != 0) return errno;
    return 0;
  }

 private:
  static std::span<const uint8_t> AsBytes(const std::string& bytes) {
    return {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
  }

  static bool IsReadableRegularFile(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (::fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR;
  }

  // The spool of `cpu`, created on first use; null after an error.
  CpuSpool* SpoolOf(uint16_t cpu) {
    if (error_ != 0) return nullptr;
    if (cpu >= cpus_.size()) cpus_.resize(cpu + 1);
    std::unique_ptr<CpuSpool>& spool = cpus_[cpu];
    if (!spool && !CreateSpool(cpu, &spool)) return nullptr;
    return spool.get();
  }

  // The first cpu seen spools into the output file itself; the others, and
  // every cpu of an output that is not a regular file, into temporary files
  // beside the output (the same file system), else in $TMPDIR.
  bool CreateSpool(uint16_t cpu, std::unique_ptr<CpuSpool>* spool) {
    if (seekable_ && !in_place_cpu_) {
      in_place_cpu_ = cpu;
      *spool = CpuSpool::InFile(out_.get(), &blocks_);
      return true;
    }
    base::ErrorOr<std::unique_ptr<CpuSpool>> created = CpuSpool::CreateTemporary(directory_, &blocks_);
    // An output like /dev/stdout has no directory to spool in.
    if (!created.ok()) created = CpuSpool::CreateTemporary(TemporaryDirectory(), &blocks_);
    if (!created.ok()) {
      error_ = created.error();
      return false;
    }
    *spool = std::move(created.value());
    return true;
  }

  // Where each cpu's pages go: the in-place cpu's right after the header
  // (where they will be once the header is put in front), the others after
  // it in cpu order. trace-cmd reads each cpu at its own offset.
  std::vector<uint64_t> DataOffsets(uint64_t data_start) const {
    std::vector<uint64_t> offsets(cpus_.size(), data_start);
    uint64_t at = data_start;
    if (in_place_cpu_) at += cpus_[*in_place_cpu_]->size();
    for (size_t cpu = 0; cpu < cpus_.size(); ++cpu) {
      if (in_place_cpu_ && cpu == *in_place_cpu_) continue;
      offsets[cpu] = at;
      at += cpus_[cpu] ? cpus_[cpu]->size() : 0;
    }
    return offsets;
  }

  // Seekable output: the in-place pages move up by the header's size (the
  // file system shifts extents; nothing is copied where it can), the other
  // cpus' pages are copied after them, and the header goes in last.
  int PlaceDataAfter(uint64_t header_size, const std::vector<uint64_t>& offsets) {
    if (in_place_cpu_) {
      uint8_t* buffer = blocks_.Acquire();
      int error = tracedat::MakeRoomAtFront(out_.get(), cpus_[*in_place_cpu_]->size(), header_size,
                                            std::span(buffer, BlockWriter::kBlockBytes));
      blocks_.Release(buffer);
      if (error != 0) return error;
    }
    for (size_t cpu = 0; cpu < cpus_.size(); ++cpu) {
      if (!cpus_[cpu] || (in_place_cpu_ && cpu == *in_place_cpu_)) continue;
      if (int error = cpus_[cpu]->CopyTo(out_.get(), offsets[cpu])) return error;
    }
    return 0;
  }

  // A pipe or a device: the header, then every cpu's pages in cpu order.
  int AppendData(const std::string& header) {
    if (int error = tracedat::WriteAll(out_.get(), AsBytes(header))) return error;
    for (const std::unique_ptr<CpuSpool>& spool : cpus_) {
      if (!spool) continue;
      if (int error = spool->CopyTo(out_.get(), BlockWriter::kAtPosition)) return error;
    }
    return 0;
  }

  int WriteHeaderAtStart(const std::string& header) {
    // The header is not in an aligned buffer: write it through the page cache.
    int flags = ::fcntl(out_.get(), F_GETFL);
    if (flags < 0 || ::fcntl(out_.get(), F_SETFL, flags & ~O_DIRECT) < 0) return errno;
    return tracedat::WriteAllAt(out_.get(), AsBytes(header), 0);
  }

  // Everything before the pages, padded to the page size (formats.md §1.3).
  std::string Header(const TraceInfo& info, uint32_t cpu_count, uint64_t lost_at_end) const {
    using namespace tracedat;
    ByteAppender out;
    out.PutBytes(kMagic);
    out.PutCString("6");
    out.Put<uint8_t>(0);  // little-endian
    out.Put<uint8_t>(kLongSize);
    out.Put<uint32_t>(kPageSize);
    out.PutCString("header_page");
    PutSizedText64(out, kHeaderPageText);
    out.PutCString("header_event");
    PutSizedText64(out, kHeaderEventText);
    out.Put<uint32_t>(0);  // no ftrace event formats
    PutEventSystems(out);
    out.Put<uint32_t>(0);  // no kallsyms
    out.Put<uint32_t>(0);  // no printk formats
    PutSizedText64(out, CmdlinesText());
    out.Put<uint32_t>(cpu_count);
    PutOptions(out, info, lost_at_end);

    out.PutCString("flyrecord");
    // The table and the clock text have known sizes, so the data offset is
    // known before they are written.
    std::string clock = ClockText(info.clock);
    uint64_t table_end = out.size() + uint64_t{16} * cpu_count + 8 + clock.size();
    std::vector<uint64_t> offsets = DataOffsets((table_end + kPageSize - 1) / kPageSize * kPageSize);
    for (size_t cpu = 0; cpu < cpus_.size(); ++cpu) {
      out.Put<uint64_t>(offsets[cpu]);
      out.Put<uint64_t>(cpus_[cpu] ? cpus_[cpu]->size() : 0);
    }
    PutSizedText64(out, clock);
    std::string bytes = out.bytes();
    bytes.resize((bytes.size() + kPageSize - 1) / kPageSize * kPageSize, '\0');
    return bytes;
  }

  // Systems in the order they first appear, each with its events' formats.
  void PutEventSystems(ByteAppender& out) const {
    std::vector<std::string_view> systems;
    for (const EventType& type : types_) {
      if (std::find(systems.begin(), systems.end(), type.system) == systems.end()) {
        systems.push_back(type.system);
      }
    }
    out.Put<uint32_t>(static_cast<uint32_t>(systems.size()));
    for (std::string_view system : systems) {
      out.PutCString(system);
      uint32_t count = 0;
      for (const EventType& type : types_) count += type.system == system ? 1 : 0;
      out.Put<uint32_t>(count);
      for (const EventType& type : types_) {
        if (type.system != system) continue;
        PutSizedText64(out, schema::FormatFile(tracedat::TraceDatEventName(type.name), type.id, type.fields));
      }
    }
  }

  // Saved cmdlines: "<tid> <comm>\n", what report shows as comm-pid.
  std::string CmdlinesText() const {
    std::string text;
    for (const Task& task : tasks_) text += fmt::format("{} {}\n", task.tid, task.comm);
    return text;
  }

  void PutOptions(ByteAppender& out, const TraceInfo& info, uint64_t lost_at_end) const {
    using namespace tracedat;
    out.PutBytes(std::string_view("options  \0", 10));
    // trace-cmd reads the clock from here as well as from after the cpu table.
    std::string clock = ClockText(info.clock);
    PutOption(out, kOptionTraceClock, std::string_view(clock.c_str(), clock.size() + 1));
    if (!info.hostname.empty()) PutOption(out, kOptionUname, UnameText(info.hostname));
    std::string task_lines;
    for (const Task& task : tasks_) task_lines += fmt::format("{} {}\n", task.tid, task.pid);
    PutOption(out, kOptionUdiagTasks, task_lines);
    std::string renamed;
    for (const EventType& type : types_) {
      bool representable = type.name.find('\n') == std::string::npos;
      if (representable && TraceDatEventName(type.name) != type.name) {
        renamed += fmt::format("{} {}\n", type.id, type.name);
      }
    }
    if (!renamed.empty()) PutOption(out, kOptionUdiagEventNames, renamed);
    if (lost_at_end > 0) PutOption(out, kOptionUdiagLostAtEnd, fmt::format("{}", lost_at_end));
    out.Put<uint16_t>(kOptionDone);
  }

  base::ScopedFd out_;
  std::string directory_;
  bool seekable_;  // a regular file we can read: pages are written in place
  std::vector<EventType> types_;
  std::vector<Task> tasks_;
  BlockWriter blocks_;  // before the spools, which hand their blocks back to it
  std::vector<std::unique_ptr<CpuSpool>> cpus_;
  std::optional<uint16_t> in_place_cpu_;  // the cpu spooled into out_
  int error_ = 0;  // the first failure; Finish returns it
};

}  // namespace

base::ErrorOr<std::unique_ptr<TraceWriter>> OpenTraceDatWriter(const std::string& path) {
  // Read-write so that pages written in place can be moved if need be.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EACCES) fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return base::Errno{errno};
  return std::unique_ptr<TraceWriter>(new TraceDatWriter(base::ScopedFd(fd), DirectoryOf(path)));
}

}  // namespace udiag::record
