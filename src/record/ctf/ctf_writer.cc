// The TraceWriter for CTF: events go to their CPU's stream file as they
// come, in whole packets. The metadata is rewritten (atomically, by rename)
// before the first event of a new type is taken and at every checkpoint, so
// a killed recording leaves a trace whose packets all have their classes.

#include "record/ctf/ctf_writer.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <random>
#include <unordered_map>

#include "record/ctf/event_payload.h"
#include "record/ctf/stream_file_writer.h"
#include "record/ctf/tsdl_metadata.h"

namespace udiag::record::ctf {
namespace {

// An event's header, as the metadata declares it: id (u32), timestamp
// (u64), pid and tid (s32), common_flags and common_preempt_count (u8).
constexpr size_t kEventHeaderBytes = 4 + 8 + 4 + 4 + 1 + 1;

int64_t NowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// 0 if `dir` was created or is an empty directory, else an errno.
int MakeEmptyDirectory(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0) return 0;
  if (errno != EEXIST) return errno;
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) return errno == ENOTDIR ? EEXIST : errno;
  int result = 0;
  while (const dirent* entry = ::readdir(listing)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) result = EEXIST;
  }
  ::closedir(listing);
  return result;
}

std::array<uint8_t, kUuidSize> RandomUuid() {
  std::random_device random;
  std::array<uint8_t, kUuidSize> uuid;
  for (uint8_t& byte : uuid) byte = static_cast<uint8_t>(random());
  uuid[6] = (uuid[6] & 0x0f) | 0x40;  // version 4
  uuid[8] = (uuid[8] & 0x3f) | 0x80;  // RFC 4122 variant
  return uuid;
}

int WriteFile(const std::string& path, std::string_view text) {
  base::ScopedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) return errno;
  while (!text.empty()) {
    ssize_t written = ::write(fd.get(), text.data(), text.size());
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return written < 0 ? errno : EIO;
    text.remove_prefix(written);
  }
  return ::close(fd.Release()) == 0 ? 0 : errno;
}

class CtfWriter : public TraceWriter {
 public:
  explicit CtfWriter(std::string dir)
      : dir_(std::move(dir)), clock_offset_ns_(NowNs(CLOCK_REALTIME) - NowNs(CLOCK_MONOTONIC)) {
    model_.uuid = RandomUuid();
    blocks_.PrepareForStream();
  }

  void AddEventType(const EventType& type) override {
    if (!type_index_.emplace(type.id, model_.types.size()).second) return;
    model_.types.push_back(type);
    plans_.push_back(PlanPayload(type));
  }

  void AddTask(const Task& task) override { model_.tasks.push_back(task); }

  // Encodes the event in place, at the end of its stream's packet. A run of
  // records mostly has one type and one cpu: both are looked up when they
  // change.
  void Write(const Record& record) override {
    if (record.event_id != last_type_id_) {
      auto type = type_index_.find(record.event_id);
      if (type == type_index_.end()) return SetError(EINVAL);
      last_type_id_ = record.event_id;
      last_type_ = type->second;
    }
    if (last_type_ >= types_in_metadata_) SetError(WriteMetadata());
    if (record.cpu != last_cpu_ || last_stream_ == nullptr) {
      last_stream_ = StreamFor(record.cpu);
      if (last_stream_ == nullptr) return SetError(errno);
      last_cpu_ = record.cpu;
    }
    // Records are in time order within each cpu (a stream), not across them.
    first_timestamp_ = has_records_ ? std::min(first_timestamp_, record.timestamp) : record.timestamp;
    last_timestamp_ = std::max(last_timestamp_, record.timestamp);
    has_records_ = true;
    const PayloadPlan& plan = plans_[last_type_];
    uint8_t* const event = last_stream_->BeginEvent(
        record.timestamp, record.lost_before, kEventHeaderBytes + plan.EncodedBound(record.data.size()));
    uint8_t* at = event;
    auto put = [&](auto value) {
      std::memcpy(at, &value, sizeof(value));
      at += sizeof(value);
    };
    put(record.event_id);
    put(record.timestamp);
    put(record.pid);
    put(record.tid);
    put(record.data.size() > 2 ? record.data[2] : uint8_t{0});  // common_flags
    put(record.data.size() > 3 ? record.data[3] : uint8_t{0});  // common_preempt_count
    at = EncodePayload(plan, record.data, at);
    last_stream_->EndEvent(record.timestamp, at - event);
  }

  int Checkpoint(const TraceInfo& info) override {
    model_.info = info;
    if (model_.tasks.size() != tasks_in_metadata_) SetError(WriteMetadata());
    for (auto& [cpu, stream] : streams_) SetError(stream->Flush());
    SetError(blocks_.Wait());  // on disk, should the recorder be killed now
    return error_;
  }

  int Finish(const TraceInfo& info) override {
    model_.info = info;
    for (uint32_t cpu = 0; cpu < info.cpus; ++cpu) {
      if (StreamFor(cpu) == nullptr) SetError(errno);
    }
    if (info.lost_at_end > 0) {
      if (StreamFileWriter* stream = StreamFor(0)) {
        stream->AddTrailingLoss(last_timestamp_, info.lost_at_end);
      } else {
        SetError(errno);
      }
    }
    for (auto& [cpu, stream] : streams_) {
      if (int closed = stream->Close(first_timestamp_)) SetError(closed);
    }
    if (error_ != 0) return error_;
    return WriteMetadata();
  }

 private:
  void SetError(int error) {
    if (error_ == 0) error_ = error;
  }

  // Replaces the metadata file whole: a reader never sees half of one.
  int WriteMetadata() {
    std::string temporary = dir_ + "/.metadata.tmp";
    if (int error = WriteFile(temporary, MetadataText(model_, clock_offset_ns_))) return error;
    if (::rename(temporary.c_str(), (dir_ + "/metadata").c_str()) != 0) return errno;
    types_in_metadata_ = model_.types.size();
    tasks_in_metadata_ = model_.tasks.size();
    return 0;
  }

  // The stream file of `cpu`, created on first use; nullptr with errno set
  // if it cannot be created.
  StreamFileWriter* StreamFor(uint32_t cpu) {
    auto found = streams_.find(cpu);
    if (found != streams_.end()) return found->second.get();
    std::string path = dir_ + "/stream_" + std::to_string(cpu);
    constexpr int kFlags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
    // Directly to the disk where the file system can (StreamFileWriter).
    base::ScopedFd fd(::open(path.c_str(), kFlags | O_DIRECT, 0644));
    if (!fd && errno == EINVAL) fd = base::ScopedFd(::open(path.c_str(), kFlags, 0644));
    if (!fd) return nullptr;
    auto stream = std::make_unique<StreamFileWriter>(std::move(fd), cpu, model_.uuid, &blocks_);
    return streams_.emplace(cpu, std::move(stream)).first->second.get();
  }

  std::string dir_;
  int64_t clock_offset_ns_;
  TraceModel model_;
  std::unordered_map<uint32_t, size_t> type_index_;  // type id -> model_.types index
  std::vector<PayloadPlan> plans_;                   // by model_.types index
  std::map<uint32_t, std::unique_ptr<StreamFileWriter>> streams_;
  // Writes the streams' packets; after streams_, so that it has written
  // them all before their files close.
  BlockWriter blocks_;
  // The last record's type (its model_.types index) and stream.
  uint32_t last_type_id_ = UINT32_MAX;
  size_t last_type_ = 0;
  uint32_t last_cpu_ = 0;
  StreamFileWriter* last_stream_ = nullptr;
  size_t types_in_metadata_ = 0, tasks_in_metadata_ = 0;  // on disk
  bool has_records_ = false;
  uint64_t first_timestamp_ = 0, last_timestamp_ = 0;
  int error_ = 0;
};

}  // namespace

base::ErrorOr<std::unique_ptr<TraceWriter>> OpenCtfWriter(const std::string& dir) {
  if (int error = MakeEmptyDirectory(dir)) return base::Errno{error};
  return std::unique_ptr<TraceWriter>(std::make_unique<CtfWriter>(dir));
}

}  // namespace udiag::record::ctf
