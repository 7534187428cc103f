#include "record/tracedat/tracedat_writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "base/scoped_fd.h"
#include "record/fd_io.h"
#include "record/tracedat/byte_io.h"
#include "record/tracedat/cpu_spool.h"
#include "record/tracedat/region_layout.h"
#include "record/tracedat/tracedat_layout.h"
#include "schema/event_description.h"

namespace udiag::record {
namespace {

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
  TraceDatWriter(base::ScopedFd out, std::string directory, std::optional<tracedat::RegionLayout> regions)
      : out_(std::move(out)), directory_(std::move(directory)), regions_(regions) {
    if (!regions_) return;
    BlockWriter::PreferDirectIo(out_.get());
    // The header and its twin get their blocks now, so that rewriting them
    // on a disk filled up by the pages needs none (best effort: the squeeze
    // at the end drops what the header does not use).
    ::fallocate(out_.get(), 0, 0, tracedat::kHeaderReserveBytes);
    ::fallocate(out_.get(), 0, tracedat::kHeaderBackupOffset, tracedat::kPageSize + tracedat::kHeaderReserveBytes);
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
    if (CpuSpool* spool = SpoolOf(record.cpu)) {
      spool->Add(record.timestamp, record.lost_before, record.data);
      NoteOverflow(*spool);
    }
  }

  std::optional<PageRegions> RegionsForPages() const override {
    if (!regions_) return std::nullopt;
    return PageRegions{out_.get(), regions_->region_bytes, regions_->cpus};
  }

  bool PagesOnDisk(uint16_t cpu, uint64_t bytes) override {
    if (!regions_ || cpu >= regions_->cpus || bytes % tracedat::kPageSize != 0 || bytes > regions_->region_bytes ||
        (cpu < cpus_.size() && cpus_[cpu])) {
      return false;
    }
    if (cpu >= on_disk_.size()) on_disk_.resize(cpu + 1);
    on_disk_[cpu] = std::max(on_disk_[cpu], bytes);
    return true;
  }

  void PagesFailed(int error) override {
    if (error_ == 0) error_ = error;
  }

  bool KeepsPages() const override { return true; }

  bool WritePage(uint16_t cpu, std::span<const uint8_t> page) override {
    if (page.size() != tracedat::kPageSize) return false;
    if (CpuSpool* spool = SpoolOf(cpu)) {
      spool->AddPage(page);
      NoteOverflow(*spool);
    }
    return true;
  }

  // Queues a header naming every page queued so far behind those pages: its
  // twin first, then the header itself, so a kill leaves one of them whole.
  int Checkpoint(const TraceInfo& info) override {
    if (error_ == 0) error_ = blocks_.error();
    if (!regions_ || error_ != 0) return error_;
    for (std::unique_ptr<CpuSpool>& spool : cpus_) {
      if (spool && InRegion(*spool)) spool->Flush();
    }
    std::vector<tracedat::CpuData> table(std::max(cpus_.size(), on_disk_.size()));
    for (size_t cpu = 0; cpu < table.size(); ++cpu) table[cpu] = RegionData(cpu, /*written_only=*/false);
    std::string header = Header(info, CpuCount(info), LostAtEnd(info), table, /*under_way=*/true);
    std::string twin(tracedat::kPageSize, '\0');
    std::memcpy(twin.data(), tracedat::kHeaderBackupMagic, sizeof tracedat::kHeaderBackupMagic);
    uint64_t size = header.size();
    std::memcpy(twin.data() + sizeof tracedat::kHeaderBackupMagic, &size, sizeof size);
    SubmitBytes(twin + header, tracedat::kHeaderBackupOffset);
    SubmitBytes(header, 0);
    return 0;
  }

  int Finish(const TraceInfo& info) override {
    uint64_t lost_at_end = LostAtEnd(info);
    for (std::unique_ptr<CpuSpool>& spool : cpus_) {
      if (spool) spool->Flush();
    }
    if (int error = blocks_.Wait(); error != 0 && error_ == 0) error_ = error;
    uint32_t cpu_count = CpuCount(info);
    cpus_.resize(cpu_count);
    int error = regions_ ? FinishRegions(info, cpu_count, lost_at_end) : FinishStreamed(info, cpu_count, lost_at_end);
    if (error != 0) return error;
    if (::close(out_.Release()) != 0) return errno;
    return 0;
  }

 private:
  static std::span<const uint8_t> AsBytes(const std::string& bytes) {
    return {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
  }

  uint32_t CpuCount(const TraceInfo& info) const {
    return std::max<uint32_t>(info.cpus, static_cast<uint32_t>(std::max(cpus_.size(), on_disk_.size())));
  }

  // A cpu's pages in its region, as a header names them: the daemon's on
  // disk, or our own spool's (queued, or only those written).
  tracedat::CpuData RegionData(size_t cpu, bool written_only) const {
    if (cpu < on_disk_.size() && on_disk_[cpu] > 0) return {regions_->CpuOffset(static_cast<uint32_t>(cpu)), on_disk_[cpu]};
    if (cpu >= cpus_.size() || !cpus_[cpu] || !InRegion(*cpus_[cpu])) return {};
    const uint64_t size = written_only ? cpus_[cpu]->written() : cpus_[cpu]->size();
    return size > 0 ? tracedat::CpuData{cpus_[cpu]->offset(), size} : tracedat::CpuData{};
  }

  uint64_t LostAtEnd(const TraceInfo& info) const {
    uint64_t lost = info.lost_at_end;
    for (const std::unique_ptr<CpuSpool>& spool : cpus_) lost += spool ? spool->lost_at_end() : 0;
    return lost;
  }

  bool InRegion(const CpuSpool& spool) const { return spool.fd() == out_.get(); }

  // A region that is full stops the file growing, as a full disk does.
  void NoteOverflow(const CpuSpool& spool) {
    if (!spool.fits() && error_ == 0) error_ = EFBIG;
  }

  // The spool of `cpu`, created on first use; null after an error.
  CpuSpool* SpoolOf(uint16_t cpu) {
    // A region the daemon writes into takes nothing from us.
    if (error_ == 0 && cpu < on_disk_.size() && on_disk_[cpu] > 0) error_ = EPROTO;
    if (error_ != 0) return nullptr;
    if (cpu >= cpus_.size()) cpus_.resize(cpu + 1);
    std::unique_ptr<CpuSpool>& spool = cpus_[cpu];
    if (!spool && !CreateSpool(cpu, &spool)) return nullptr;
    return spool.get();
  }

  // A cpu with a region spools into it; the others (every cpu of a pipe or
  // of a file system without sparse files) into temporary files beside the
  // output (the same file system), else in $TMPDIR.
  bool CreateSpool(uint16_t cpu, std::unique_ptr<CpuSpool>* spool) {
    if (regions_ && cpu < regions_->cpus) {
      *spool = CpuSpool::InRegion(out_.get(), regions_->CpuOffset(cpu), regions_->region_bytes, cpu, &blocks_);
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

  // Queues `bytes` (a multiple of the page size) for writing at `offset`.
  void SubmitBytes(const std::string& bytes, uint64_t offset) {
    for (size_t done = 0; done < bytes.size();) {
      size_t part = std::min(bytes.size() - done, BlockWriter::kBlockBytes);
      uint8_t* block = blocks_.Acquire();
      std::memcpy(block, bytes.data() + done, part);
      blocks_.Submit(block, out_.get(), offset + done, part);
      done += part;
    }
  }

  // The regions' pages are where the checkpoints said; the final header
  // names all that reached the disk, the gaps go, and the cpus without a
  // region are copied after the rest. After a write error the file keeps
  // every page written before it.
  int FinishRegions(const TraceInfo& info, uint32_t cpu_count, uint64_t lost_at_end) {
    std::vector<tracedat::CpuData> table(cpu_count);
    for (size_t cpu = 0; cpu < cpu_count; ++cpu) table[cpu] = RegionData(cpu, /*written_only=*/true);
    auto publish_under_way = [&](const std::vector<tracedat::CpuData>& now) {
      return tracedat::WriteHeaderBytes(out_.get(), Header(info, cpu_count, lost_at_end, now, true), 0);
    };
    uint64_t data_start = Header(info, cpu_count, lost_at_end, table, true).size();
    int error = publish_under_way(table);
    if (error == 0) error = tracedat::CompactRegions(out_.get(), data_start, &table, publish_under_way);
    if (error_ != 0) return error_;
    if (error != 0) return error;
    uint64_t end = data_start;
    for (const tracedat::CpuData& data : table) end = std::max(end, data.offset + data.size);
    for (size_t cpu = 0; cpu < cpu_count; ++cpu) {
      if (!cpus_[cpu] || InRegion(*cpus_[cpu]) || cpus_[cpu]->size() == 0) continue;
      if (int copy_error = cpus_[cpu]->CopyTo(out_.get(), end)) return copy_error;
      table[cpu] = {end, cpus_[cpu]->size()};
      end += cpus_[cpu]->size();
    }
    if (int wait_error = blocks_.Wait()) return wait_error;
    // Without the region option: the file is finished. Any page this frees
    // at the header's end is padding before the pages.
    return tracedat::WriteHeaderBytes(out_.get(), Header(info, cpu_count, lost_at_end, table), 0);
  }

  // A pipe, a device, or a file system without sparse files: the header,
  // then every cpu's pages in cpu order.
  int FinishStreamed(const TraceInfo& info, uint32_t cpu_count, uint64_t lost_at_end) {
    if (error_ != 0) return error_;
    std::vector<tracedat::CpuData> table(cpu_count);
    for (size_t cpu = 0; cpu < cpu_count; ++cpu) table[cpu].size = cpus_[cpu] ? cpus_[cpu]->size() : 0;
    std::string header = Header(info, cpu_count, lost_at_end, table);
    uint64_t at = header.size();
    for (tracedat::CpuData& data : table) {
      data.offset = at;
      at += data.size;
    }
    header = Header(info, cpu_count, lost_at_end, table);
    if (int error = WriteAll(out_.get(), AsBytes(header))) return error;
    for (const std::unique_ptr<CpuSpool>& spool : cpus_) {
      if (!spool) continue;
      if (int error = spool->CopyTo(out_.get(), BlockWriter::kAtPosition)) return error;
    }
    return blocks_.Wait();
  }

  // Everything before the pages, padded to the page size (formats.md §1.3).
  // Its size does not depend on the table's values; a cpu without pages is
  // placed where the pages would start.
  std::string Header(const TraceInfo& info, uint32_t cpu_count, uint64_t lost_at_end,
                     const std::vector<tracedat::CpuData>& table, bool under_way = false) const {
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
    PutOptions(out, info, lost_at_end, under_way ? regions_ : std::nullopt);

    out.PutCString("flyrecord");
    std::string clock = ClockText(info.clock);
    uint64_t table_end = out.size() + uint64_t{16} * cpu_count + 8 + clock.size();
    uint64_t data_start = (table_end + kPageSize - 1) / kPageSize * kPageSize;
    for (size_t cpu = 0; cpu < cpu_count; ++cpu) {
      bool has_pages = cpu < table.size() && table[cpu].size > 0;
      out.Put<uint64_t>(has_pages ? table[cpu].offset : data_start);
      out.Put<uint64_t>(has_pages ? table[cpu].size : 0);
    }
    PutSizedText64(out, clock);
    std::string bytes = out.bytes();
    bytes.resize(data_start, '\0');
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

  void PutOptions(ByteAppender& out, const TraceInfo& info, uint64_t lost_at_end,
                  std::optional<tracedat::RegionLayout> regions) const {
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
    if (regions) PutOption(out, kOptionUdiagRegionBytes, fmt::format("{}", regions->region_bytes));
    out.Put<uint16_t>(kOptionDone);
  }

  base::ScopedFd out_;
  std::string directory_;
  std::optional<tracedat::RegionLayout> regions_;  // none: the file is assembled at the end
  std::vector<EventType> types_;
  std::vector<Task> tasks_;
  BlockWriter blocks_;  // before the spools, which hand their blocks back to it
  std::vector<std::unique_ptr<CpuSpool>> cpus_;
  std::vector<uint64_t> on_disk_;  // by cpu: bytes the daemon wrote into its region
  int error_ = 0;  // the first failure; Finish returns it
};

}  // namespace

base::ErrorOr<std::unique_ptr<TraceWriter>> OpenTraceDatWriter(const std::string& path) {
  // Read-write so that the regions' pages can be moved together at the end.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool readable = fd >= 0;
  if (fd < 0 && errno == EACCES) fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return base::Errno{errno};
  std::optional<tracedat::RegionLayout> regions;
  if (readable) regions = tracedat::ProbeRegionLayout(fd, static_cast<uint32_t>(get_nprocs_conf()));
  return std::unique_ptr<TraceWriter>(new TraceDatWriter(base::ScopedFd(fd), DirectoryOf(path), regions));
}

}  // namespace udiag::record
