// The TraceReader for CTF: the model from the metadata comment, then a
// merge of the per-CPU stream files by timestamp.

#include "record/ctf/ctf_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "record/ctf/stream_file_reader.h"

namespace udiag::record::ctf {
namespace {

constexpr std::string_view kSignature = "/* CTF 1.8 */\n";
constexpr off_t kMaxMetadataSize = 64 << 20;

base::ErrorOr<std::string> ReadMetadata(const std::string& path) {
  base::ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st;
  if (!fd || ::fstat(fd.get(), &st) != 0) return base::Errno{errno};
  if (st.st_size > kMaxMetadataSize) return base::Errno{EINVAL};
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t got = ::pread(fd.get(), text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return base::Errno{got < 0 ? errno : EINVAL};
    done += got;
  }
  return text;
}

class CtfReader : public TraceReader {
 public:
  CtfReader(TraceModel model, std::vector<std::string> stream_paths)
      : model_(std::move(model)), stream_paths_(std::move(stream_paths)) {
    for (size_t i = 0; i < model_.types.size(); ++i) type_index_[model_.types[i].id] = i;
  }

  // Reads every stream once to validate it and learn the trailing losses,
  // then opens them again for Next().
  int Load() {
    for (const std::string& path : stream_paths_) {
      auto stream = StreamFileReader::Open(path, model_, type_index_);
      if (!stream.ok()) return stream.error();
      Record record;
      StreamFileReader::Status status;
      while ((status = stream->Next(&record)) == StreamFileReader::Status::kRecord) {
      }
      if (status == StreamFileReader::Status::kMalformed) return EINVAL;
      model_.info.lost_at_end += stream->trailing_loss();
    }
    for (const std::string& path : stream_paths_) {
      auto stream = StreamFileReader::Open(path, model_, type_index_);
      if (!stream.ok()) return stream.error();
      cursors_.push_back(Cursor{std::move(stream.value()), {}, false});
      Advance(&cursors_.back());
    }
    return 0;
  }

  const TraceInfo& info() const override { return model_.info; }
  const std::vector<EventType>& event_types() const override { return model_.types; }
  const std::vector<Task>& tasks() const override { return model_.tasks; }

  bool Next(Record* out) override {
    // The record returned last lives in its cursor's buffer until now.
    if (returned_ != nullptr) Advance(returned_);
    returned_ = nullptr;
    for (Cursor& cursor : cursors_) {
      if (!cursor.has_record) continue;
      if (returned_ == nullptr || cursor.record.timestamp < returned_->record.timestamp ||
          (cursor.record.timestamp == returned_->record.timestamp &&
           cursor.record.cpu < returned_->record.cpu)) {
        returned_ = &cursor;
      }
    }
    if (returned_ == nullptr) return false;
    *out = returned_->record;
    return true;
  }

 private:
  struct Cursor {
    StreamFileReader stream;
    Record record;
    bool has_record;
  };

  // A file that changed since Load() simply ends where it stops making sense.
  static void Advance(Cursor* cursor) {
    cursor->has_record = cursor->stream.Next(&cursor->record) == StreamFileReader::Status::kRecord;
  }

  TraceModel model_;
  std::vector<std::string> stream_paths_;
  std::unordered_map<uint32_t, size_t> type_index_;
  std::vector<Cursor> cursors_;
  Cursor* returned_ = nullptr;
};

}  // namespace

base::ErrorOr<std::vector<std::string>> CtfStreamPaths(const std::string& dir) {
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) return base::Errno{errno};
  std::vector<std::string> paths;
  while (const dirent* entry = ::readdir(listing)) {
    std::string name = entry->d_name;
    struct stat st;
    std::string path = dir + "/" + name;
    if (name == "metadata" || name.starts_with('.') || ::stat(path.c_str(), &st) != 0 ||
        !S_ISREG(st.st_mode)) {
      continue;
    }
    paths.push_back(std::move(path));
  }
  ::closedir(listing);
  std::sort(paths.begin(), paths.end());
  return paths;
}

base::ErrorOr<std::unique_ptr<TraceReader>> OpenCtfReader(const std::string& dir) {
  auto metadata = ReadMetadata(dir + "/metadata");
  if (!metadata.ok()) return base::Errno{metadata.error()};
  TraceModel model;
  if (!metadata->starts_with(kSignature)) return base::Errno{EINVAL};
  if (int error = ParseModelComment(*metadata, &model)) return base::Errno{error};
  auto paths = CtfStreamPaths(dir);
  if (!paths.ok()) return base::Errno{paths.error()};
  auto reader = std::make_unique<CtfReader>(std::move(model), std::move(paths.value()));
  if (int error = reader->Load()) return base::Errno{error};
  return std::unique_ptr<TraceReader>(std::move(reader));
}

}  // namespace udiag::record::ctf
