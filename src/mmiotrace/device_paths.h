// Which mmap()s are device mappings, and the bus (physical) address of
// their first byte: the user-space counterpart of mmiotrace's ioremap hook.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace udiag::mmiotrace {

class DevicePaths {
 public:
  // `extra_files` are the --map paths (phys = file offset). `sysfs_root` is
  // prepended to every /sys path read (tests point it at a fake tree).
  explicit DevicePaths(std::vector<std::string> extra_files, std::string sysfs_root = "");

  // The phys address of a mapping of `path` (what /proc/self/fd/N links to)
  // at file offset `offset`, or nullopt when the path is no device we trace:
  //  - /dev/uioN: map M = offset / page size, phys from
  //    /sys/class/uio/uioN/maps/mapM/addr;
  //  - /sys/.../resourceN[_wc]: BAR N's start from the device's `resource`
  //    file, plus the offset;
  //  - /dev/vfio/devices/vfioX: region index = offset >> 40, BAR start of the
  //    device behind /sys/class/vfio-dev/vfioX/device, plus the rest of the
  //    offset; group device fds (anon_inode:[vfio-device]) have no path to
  //    the device, so their phys is the offset inside the region;
  //  - /dev/mem and every extra file: the offset.
  std::optional<uint64_t> PhysOf(const std::string& path, uint64_t offset) const;

 private:
  std::optional<uint64_t> BarStart(const std::string& device_dir, unsigned bar) const;
  std::optional<uint64_t> UioMapAddr(const std::string& uio, uint64_t offset) const;

  std::vector<std::string> extra_files_;
  std::string sysfs_root_;
};

}  // namespace udiag::mmiotrace
