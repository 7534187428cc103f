#include "mmiotrace/device_paths.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <string_view>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace udiag::mmiotrace {
namespace {

constexpr unsigned kVfioOffsetShift = 40;  // VFIO_PCI_OFFSET_SHIFT

std::string ReadFirstLine(const std::string& path, unsigned line_index = 0) {
  std::ifstream in(path);
  std::string line;
  for (unsigned i = 0; i <= line_index; ++i) {
    if (!std::getline(in, line)) return "";
  }
  return line;
}

std::optional<uint64_t> ParseHexWord(const std::string& text) {
  std::istringstream in(text);
  uint64_t value = 0;
  if (!(in >> std::hex >> value)) return std::nullopt;
  return value;
}

// `text` == prefix + decimal number (+ one of `suffixes`); the number.
std::optional<unsigned> NumberAfter(std::string_view text, std::string_view prefix,
                                    std::initializer_list<std::string_view> suffixes = {}) {
  if (!text.starts_with(prefix)) return std::nullopt;
  text.remove_prefix(prefix.size());
  for (std::string_view suffix : suffixes) {
    if (text.ends_with(suffix)) text.remove_suffix(suffix.size());
  }
  unsigned number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return number;
}

}  // namespace

DevicePaths::DevicePaths(std::vector<std::string> extra_files, std::string sysfs_root)
    : extra_files_(std::move(extra_files)), sysfs_root_(std::move(sysfs_root)) {}

std::optional<uint64_t> DevicePaths::BarStart(const std::string& device_dir, unsigned bar) const {
  // One "start end flags" line per resource, BAR 0 first.
  return ParseHexWord(ReadFirstLine(device_dir + "/resource", bar));
}

std::optional<uint64_t> DevicePaths::UioMapAddr(const std::string& uio, uint64_t offset) const {
  uint64_t map = offset / static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return ParseHexWord(ReadFirstLine(sysfs_root_ + "/sys/class/uio/" + uio + "/maps/map" + std::to_string(map) + "/addr"));
}

std::optional<uint64_t> DevicePaths::PhysOf(const std::string& path, uint64_t offset) const {
  if (std::find(extra_files_.begin(), extra_files_.end(), path) != extra_files_.end()) return offset;
  if (path == "/dev/mem") return offset;
  uint64_t in_region = offset & ((uint64_t{1} << kVfioOffsetShift) - 1);
  if (std::optional<unsigned> uio = NumberAfter(path, "/dev/uio")) {
    return UioMapAddr("uio" + std::to_string(*uio), offset);
  }
  if (std::optional<unsigned> vfio = NumberAfter(path, "/dev/vfio/devices/vfio")) {
    unsigned region = static_cast<unsigned>(offset >> kVfioOffsetShift);
    std::optional<uint64_t> start =
        BarStart(sysfs_root_ + "/sys/class/vfio-dev/vfio" + std::to_string(*vfio) + "/device", region);
    if (!start) return std::nullopt;
    return *start + in_region;
  }
  size_t slash = path.rfind('/');
  if (path.starts_with("/sys/") && slash != std::string::npos) {
    if (std::optional<unsigned> bar = NumberAfter(std::string_view(path).substr(slash + 1), "resource", {"_wc"})) {
      std::optional<uint64_t> start = BarStart(sysfs_root_ + path.substr(0, slash), *bar);
      if (!start) return std::nullopt;
      return *start + offset;
    }
  }
  if (path == "anon_inode:[vfio-device]") return in_region;
  return std::nullopt;
}

}  // namespace udiag::mmiotrace
