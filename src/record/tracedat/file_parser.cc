#include "record/tracedat/file_parser.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "record/tracedat/byte_io.h"
#include "record/tracedat/format_parser.h"
#include "record/tracedat/tracedat_layout.h"

namespace udiag::record::tracedat {
namespace {

constexpr uint32_t kMinPageSize = 64;
constexpr uint32_t kMaxPageSize = 1u << 24;
constexpr uint32_t kMaxCpus = 1u << 16;  // Record::cpu is 16 bits
constexpr int kMaxOptionSections = 64;   // bounds a v7 chain that loops

template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return error == std::errc() && end == text.data() + text.size();
}

// Calls `line_fn` for each non-empty line of `text`.
template <typename Fn>
bool ForEachLine(std::string_view text, Fn line_fn) {
  while (!text.empty()) {
    size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    if (!line.empty() && !line_fn(line)) return false;
  }
  return true;
}

// "<number> <rest>" as in saved cmdlines and udiag's task option.
bool SplitNumberLine(std::string_view line, uint32_t* number, std::string_view* rest) {
  size_t space = line.find(' ');
  if (space == std::string_view::npos) return false;
  *rest = line.substr(space + 1);
  return ParseNumber(line.substr(0, space), number);
}

class Parser {
 public:
  Parser(std::span<const uint8_t> file, ParsedTraceDat* out) : cursor_(file), file_(file), out_(out) {}

  bool Parse() {
    if (!ParseFileHeader()) return false;
    bool body_ok = version_ == 6 ? ParseV6Body() : ParseV7Body();
    return body_ok && ApplyUdiagOptions();
  }

 private:
  bool Expect(std::string_view literal) {
    std::optional<std::string_view> got = cursor_.GetBytes(literal.size());
    return got && *got == literal;
  }

  std::optional<std::string_view> Sized64() {
    std::optional<uint64_t> size = cursor_.Get<uint64_t>();
    if (!size) return std::nullopt;
    return cursor_.GetBytes(*size);
  }

  bool SkipSized32() {
    std::optional<uint32_t> size = cursor_.Get<uint32_t>();
    return size && cursor_.GetBytes(*size);
  }

  bool ParseFileHeader() {
    if (!Expect(kMagic)) return false;
    std::optional<std::string_view> version = cursor_.GetCString();
    std::optional<uint8_t> big_endian = cursor_.Get<uint8_t>();
    std::optional<uint8_t> long_size = cursor_.Get<uint8_t>();
    std::optional<uint32_t> page_size = cursor_.Get<uint32_t>();
    if (!version || (*version != "6" && *version != "7") || !big_endian || *big_endian != 0 ||
        !long_size || (*long_size != 4 && *long_size != 8) || !page_size ||
        *page_size < kMinPageSize || *page_size > kMaxPageSize) {
      return false;
    }
    version_ = *version == "6" ? 6 : 7;
    out_->long_size = *long_size;
    out_->page_size = *page_size;
    return true;
  }

  // §1.3: the metadata in a fixed order, then options and the flyrecord.
  bool ParseV6Body() {
    return ParseHeaderTexts() && ParseFormats(/*system=*/"ftrace") && ParseSystems() &&
           SkipSized32() && SkipSized32() && ParseCmdlines() && ParseCpuCount() && ParseOptionsAndFlyrecord();
  }

  // §1.4: a chain of options sections pointing at the metadata sections and
  // the top buffer's pages. Compressed files are not supported.
  bool ParseV7Body() {
    std::optional<std::string_view> compression = cursor_.GetCString();
    std::optional<std::string_view> compression_version = cursor_.GetCString();
    std::optional<uint64_t> options_offset = cursor_.Get<uint64_t>();
    if (!compression || *compression != "none" || !compression_version || !options_offset) return false;
    out_->info.clock = "local";
    out_->info.cpus = 0;
    uint64_t next = *options_offset;
    for (int sections = 0; next != 0; ++sections) {
      if (sections == kMaxOptionSections || !EnterSection(next, kOptionDone)) return false;
      if (!ParseV7Options(&next)) return false;
    }
    return EnterSection(sections_.header_info, kOptionHeaderInfo) && ParseHeaderTexts() &&
           EnterSection(sections_.ftrace_events, kOptionFtraceEvents) && ParseFormats("ftrace") &&
           EnterSection(sections_.event_formats, kOptionEventFormats) && ParseSystems() &&
           EnterSection(sections_.cmdlines, kOptionCmdlines) && ParseCmdlines() && ResizeCpus();
  }

  bool ResizeCpus() {
    out_->cpus.resize(out_->info.cpus);  // cpus without a buffer entry are empty
    return true;
  }

  // Moves to the contents of the uncompressed section with `id` at `offset`.
  bool EnterSection(uint64_t offset, uint16_t id) {
    if (!cursor_.Seek(offset)) return false;
    std::optional<uint16_t> section_id = cursor_.Get<uint16_t>();
    std::optional<uint16_t> flags = cursor_.Get<uint16_t>();
    std::optional<uint32_t> description = cursor_.Get<uint32_t>();
    std::optional<uint64_t> size = cursor_.Get<uint64_t>();
    constexpr uint16_t kCompressed = 1;
    return section_id && *section_id == id && flags && (*flags & kCompressed) == 0 && description &&
           size;
  }

  // One options section; *next gets the offset of the next one (0: none).
  bool ParseV7Options(uint64_t* next) {
    while (true) {
      std::optional<uint16_t> id = cursor_.Get<uint16_t>();
      std::optional<uint32_t> size = cursor_.Get<uint32_t>();
      if (!id || !size) return false;
      std::optional<std::string_view> data = cursor_.GetBytes(*size);
      if (!data) return false;
      ByteCursor option(std::span(reinterpret_cast<const uint8_t*>(data->data()), data->size()));
      switch (*id) {
        case kOptionDone: {
          std::optional<uint64_t> offset = option.Get<uint64_t>();
          if (!offset) return false;
          *next = *offset;
          return true;
        }
        case kOptionHeaderInfo:
        case kOptionFtraceEvents:
        case kOptionEventFormats:
        case kOptionCmdlines: {
          std::optional<uint64_t> offset = option.Get<uint64_t>();
          if (!offset) return false;
          sections_.Set(*id, *offset);
          break;
        }
        case kOptionCpuCount: {
          std::optional<uint32_t> cpus = option.Get<uint32_t>();
          if (!cpus || *cpus > kMaxCpus) return false;
          out_->info.cpus = std::max(out_->info.cpus, *cpus);
          break;
        }
        case kOptionBuffer:
          if (!ParseBufferOption(option)) return false;
          break;
        default:
          if (!ApplyOption(*id, *data)) return false;
      }
    }
  }

  // The top buffer (name ""): its clock and each cpu's pages. Instances
  // (named buffers) are not part of the model and are skipped.
  bool ParseBufferOption(ByteCursor& option) {
    std::optional<uint64_t> section = option.Get<uint64_t>();
    std::optional<std::string_view> name = option.GetCString();
    std::optional<std::string_view> clock = option.GetCString();
    std::optional<uint32_t> page_size = option.Get<uint32_t>();
    std::optional<uint32_t> cpus = option.Get<uint32_t>();
    if (!section || !name || !clock || !page_size || !cpus) return false;
    if (!name->empty()) return true;
    if (*page_size != out_->page_size || *cpus > kMaxCpus) return false;
    out_->info.clock = std::string(*clock);
    for (uint32_t i = 0; i < *cpus; ++i) {
      std::optional<uint32_t> cpu = option.Get<uint32_t>();
      std::optional<uint64_t> offset = option.Get<uint64_t>();
      std::optional<uint64_t> size = option.Get<uint64_t>();
      if (!cpu || *cpu >= kMaxCpus || !offset || !size || !ValidPages(*offset, *size)) return false;
      if (*cpu >= out_->cpus.size()) out_->cpus.resize(*cpu + 1);
      out_->cpus[*cpu] = {*offset, *size};
    }
    out_->info.cpus = std::max(out_->info.cpus, static_cast<uint32_t>(out_->cpus.size()));
    return true;
  }

  bool ValidPages(uint64_t offset, uint64_t size) const {
    return offset <= file_.size() && size <= file_.size() - offset && size % out_->page_size == 0;
  }

  bool ParseHeaderTexts() {
    return Expect(std::string_view("header_page\0", 12)) && Sized64() &&
           Expect(std::string_view("header_event\0", 13)) && Sized64();
  }

  bool ParseFormats(std::string_view system) {
    std::optional<uint32_t> count = cursor_.Get<uint32_t>();
    if (!count) return false;
    for (uint32_t i = 0; i < *count; ++i) {
      std::optional<std::string_view> text = Sized64();
      if (!text) return false;
      EventType type;
      type.system = std::string(system);
      if (ParseFormatText(*text, &type) != 0) return false;
      out_->types.push_back(std::move(type));
    }
    return true;
  }

  bool ParseSystems() {
    std::optional<uint32_t> count = cursor_.Get<uint32_t>();
    if (!count) return false;
    for (uint32_t i = 0; i < *count; ++i) {
      std::optional<std::string_view> system = cursor_.GetCString();
      if (!system || !ParseFormats(*system)) return false;
    }
    return true;
  }

  bool ParseCmdlines() {
    std::optional<std::string_view> text = Sized64();
    return text && ForEachLine(*text, [&](std::string_view line) {
             Task task;
             std::string_view comm;
             if (!SplitNumberLine(line, &task.tid, &comm)) return false;
             task.pid = task.tid;
             task.comm = std::string(comm);
             out_->tasks.push_back(std::move(task));
             return true;
           });
  }

  bool ParseCpuCount() {
    std::optional<uint32_t> cpus = cursor_.Get<uint32_t>();
    // Each cpu needs 16 bytes of table, which bounds a hostile count.
    if (!cpus || *cpus > kMaxCpus || *cpus > (file_.size() - cursor_.position()) / 16) return false;
    out_->info.cpus = *cpus;
    return true;
  }

  // Any number of option blocks, then the flyrecord table and trace clock.
  bool ParseOptionsAndFlyrecord() {
    while (true) {
      std::optional<std::string_view> tag = cursor_.GetBytes(10);
      if (!tag) return false;
      if (*tag == std::string_view("options  \0", 10)) {
        if (!ParseOptions()) return false;
      } else if (*tag == std::string_view("flyrecord\0", 10)) {
        return ParseFlyrecord();
      } else {
        return false;  // "latency  " text traces are not records
      }
    }
  }

  bool ParseOptions() {
    while (true) {
      uint64_t at = cursor_.position();
      std::optional<uint16_t> id = cursor_.Get<uint16_t>();
      if (!id) return false;
      if (*id == kOptionDone) return true;
      if (*id == kOptionUdiagRegionBytes) out_->region_option_offset = at;
      std::optional<uint32_t> size = cursor_.Get<uint32_t>();
      if (!size) return false;
      std::optional<std::string_view> data = cursor_.GetBytes(*size);
      if (!data || !ApplyOption(*id, *data)) return false;
    }
  }

  bool ApplyOption(uint16_t id, std::string_view data) {
    switch (id) {
      case kOptionUname: {
        // "sysname nodename ...": the nodename is the host.
        size_t first = data.find(' ');
        if (first == std::string_view::npos) return true;
        std::string_view rest = data.substr(first + 1);
        out_->info.hostname = std::string(rest.substr(0, rest.find(' ')));
        return true;
      }
      case kOptionUdiagTasks:
        return ForEachLine(data, [&](std::string_view line) {
          uint32_t tid = 0, pid = 0;
          std::string_view pid_text;
          if (!SplitNumberLine(line, &tid, &pid_text) || !ParseNumber(pid_text, &pid)) return false;
          process_of_[tid] = pid;
          return true;
        });
      case kOptionUdiagEventNames:
        return ForEachLine(data, [&](std::string_view line) {
          uint32_t id = 0;
          std::string_view name;
          if (!SplitNumberLine(line, &id, &name)) return false;
          real_name_of_[id] = std::string(name);
          return true;
        });
      case kOptionUdiagLostAtEnd:
        return ParseNumber(data, &out_->info.lost_at_end);
      case kOptionUdiagRegionBytes:
        return ParseNumber(data, &out_->region_bytes);
      default:
        return true;  // options that do not concern the model
    }
  }

  bool ParseFlyrecord() {
    out_->cpu_table_offset = cursor_.position();
    for (uint32_t cpu = 0; cpu < out_->info.cpus; ++cpu) {
      std::optional<uint64_t> offset = cursor_.Get<uint64_t>();
      std::optional<uint64_t> size = cursor_.Get<uint64_t>();
      if (!offset || !size || !ValidPages(*offset, *size)) return false;
      out_->cpus.push_back({*offset, *size});
    }
    // The trace clock text, "[mono] local ...": trace-cmd falls back to
    // "local" without it, and so do we.
    out_->info.clock = "local";
    out_->header_end = cursor_.position();
    std::optional<std::string_view> clock = Sized64();
    if (!clock) return true;
    out_->header_end = cursor_.position();
    size_t open = clock->find('['), close = clock->find(']');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) return false;
    out_->info.clock = std::string(clock->substr(open + 1, close - open - 1));
    return true;
  }

  // Applies udiag's options to what was read before them.
  bool ApplyUdiagOptions() {
    for (Task& task : out_->tasks) {
      auto found = process_of_.find(task.tid);
      if (found != process_of_.end()) task.pid = found->second;
    }
    for (EventType& type : out_->types) {
      auto found = real_name_of_.find(type.id);
      if (found != real_name_of_.end()) type.name = found->second;
    }
    return true;
  }

  // Where a v7 file keeps each metadata section.
  struct SectionOffsets {
    uint64_t header_info = 0, ftrace_events = 0, event_formats = 0, cmdlines = 0;
    void Set(uint16_t id, uint64_t offset) {
      if (id == kOptionHeaderInfo) header_info = offset;
      if (id == kOptionFtraceEvents) ftrace_events = offset;
      if (id == kOptionEventFormats) event_formats = offset;
      if (id == kOptionCmdlines) cmdlines = offset;
    }
  };

  ByteCursor cursor_;
  std::span<const uint8_t> file_;
  int version_ = 6;
  SectionOffsets sections_;
  ParsedTraceDat* out_;
  std::unordered_map<uint32_t, uint32_t> process_of_;
  std::unordered_map<uint32_t, std::string> real_name_of_;
};

}  // namespace

int ParseTraceDat(std::span<const uint8_t> file, ParsedTraceDat* out) {
  *out = ParsedTraceDat{};
  return Parser(file, out).Parse() ? 0 : EINVAL;
}

}  // namespace udiag::record::tracedat
