#include "record/tracedat/tracedat_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "base/scoped_fd.h"
#include "record/tracedat/file_parser.h"
#include "record/tracedat/page_decoder.h"

namespace udiag::record {
namespace {

using tracedat::CpuData;
using tracedat::DecodedPage;
using tracedat::ParsedTraceDat;

// A read-only mapping of the whole file.
class MappedFile {
 public:
  MappedFile(void* data, size_t size) : data_(data), size_(size) {}
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() { ::munmap(data_, size_); }
  std::span<const uint8_t> bytes() const { return {static_cast<const uint8_t*>(data_), size_}; }

 private:
  void* data_;
  size_t size_;
};

base::ErrorOr<std::unique_ptr<MappedFile>> MapFile(const std::string& path) {
  base::ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return base::Errno{errno};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return base::Errno{errno};
  if (st.st_size == 0) return base::Errno{EINVAL};
  void* data = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (data == MAP_FAILED) return base::Errno{errno};
  return std::make_unique<MappedFile>(data, static_cast<size_t>(st.st_size));
}

// One cpu's pages, read a page at a time.
class CpuStream {
 public:
  CpuStream(std::span<const uint8_t> data, uint32_t page_size, uint32_t long_size)
      : data_(data), page_size_(page_size), long_size_(long_size) {
    Advance();
  }

  bool done() const { return next_ >= page_.records.size(); }
  const tracedat::PageRecord& current() const { return page_.records[next_]; }
  uint64_t lost_before() const { return next_ == 0 ? lost_before_ : 0; }

  // Moves to the next record, loading pages as needed (they were checked
  // when the file was opened).
  void Advance() {
    if (next_ < page_.records.size()) ++next_;
    while (next_ >= page_.records.size() && offset_ < data_.size()) {
      uint64_t carried = page_.records.empty() ? lost_before_ : 0;  // from an empty page
      tracedat::DecodePage(data_.subspan(offset_, page_size_), long_size_, &page_);
      offset_ += page_size_;
      next_ = 0;
      lost_before_ = carried + page_.lost_before;
    }
  }

 private:
  std::span<const uint8_t> data_;
  uint32_t page_size_;
  uint32_t long_size_;
  uint64_t offset_ = 0;
  DecodedPage page_;
  size_t next_ = 0;
  uint64_t lost_before_ = 0;
};

// Checks every page of a cpu and returns the losses flagged after its last
// record, or nullopt if a page is malformed.
std::optional<uint64_t> CheckCpuPages(std::span<const uint8_t> data, uint32_t page_size,
                                      uint32_t long_size) {
  uint64_t trailing_lost = 0;
  DecodedPage page;
  for (uint64_t offset = 0; offset < data.size(); offset += page_size) {
    if (tracedat::DecodePage(data.subspan(offset, page_size), long_size, &page) != 0) return std::nullopt;
    for (const tracedat::PageRecord& record : page.records) {
      if (record.data.size() < schema::kCommonHeaderSize) return std::nullopt;
    }
    trailing_lost = page.records.empty() ? trailing_lost + page.lost_before : 0;
  }
  return trailing_lost;
}

class TraceDatReader : public TraceReader {
 public:
  TraceDatReader(std::unique_ptr<MappedFile> file, ParsedTraceDat parsed)
      : file_(std::move(file)), parsed_(std::move(parsed)) {
    for (const Task& task : parsed_.tasks) process_of_[task.tid] = task.pid;
    for (const CpuData& cpu : parsed_.cpus) {
      streams_.emplace_back(file_->bytes().subspan(cpu.offset, cpu.size), parsed_.page_size,
                            parsed_.long_size);
    }
  }

  const TraceInfo& info() const override { return parsed_.info; }
  const std::vector<EventType>& event_types() const override { return parsed_.types; }
  const std::vector<Task>& tasks() const override { return parsed_.tasks; }

  bool Next(Record* out) override {
    if (pending_ != nullptr) pending_->Advance();
    pending_ = nullptr;
    uint16_t cpu = 0;
    for (size_t i = 0; i < streams_.size(); ++i) {
      CpuStream& stream = streams_[i];
      if (stream.done()) continue;
      if (pending_ == nullptr || stream.current().timestamp < pending_->current().timestamp) {
        pending_ = &stream;
        cpu = static_cast<uint16_t>(i);
      }
    }
    if (pending_ == nullptr) return false;
    const tracedat::PageRecord& record = pending_->current();
    uint16_t common_type = 0;
    int32_t common_pid = 0;
    std::memcpy(&common_type, record.data.data(), sizeof(common_type));
    std::memcpy(&common_pid, record.data.data() + 4, sizeof(common_pid));
    out->timestamp = record.timestamp;
    out->cpu = cpu;
    out->event_id = common_type;
    out->tid = static_cast<uint32_t>(common_pid);
    auto process = process_of_.find(out->tid);
    out->pid = process != process_of_.end() ? process->second : out->tid;
    out->lost_before = pending_->lost_before();
    out->data = record.data;
    return true;
  }

 private:
  std::unique_ptr<MappedFile> file_;
  ParsedTraceDat parsed_;
  std::unordered_map<uint32_t, uint32_t> process_of_;
  std::vector<CpuStream> streams_;
  CpuStream* pending_ = nullptr;  // the stream whose record Next returned last
};

}  // namespace

base::ErrorOr<std::unique_ptr<TraceReader>> OpenTraceDatReader(const std::string& path) {
  base::ErrorOr<std::unique_ptr<MappedFile>> file = MapFile(path);
  if (!file.ok()) return base::Errno{file.error()};
  ParsedTraceDat parsed;
  if (tracedat::ParseTraceDat(file.value()->bytes(), &parsed) != 0) return base::Errno{EINVAL};
  for (const CpuData& cpu : parsed.cpus) {
    std::optional<uint64_t> trailing_lost = CheckCpuPages(
        file.value()->bytes().subspan(cpu.offset, cpu.size), parsed.page_size, parsed.long_size);
    if (!trailing_lost) return base::Errno{EINVAL};
    parsed.info.lost_at_end += *trailing_lost;
  }
  return std::unique_ptr<TraceReader>(new TraceDatReader(std::move(file.value()), std::move(parsed)));
}

}  // namespace udiag::record
