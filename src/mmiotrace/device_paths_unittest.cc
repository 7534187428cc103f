#include "mmiotrace/device_paths.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace udiag::mmiotrace {
namespace {

namespace fs = std::filesystem;

class DevicePathsTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/udiag-devpaths-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(root_ + path).parent_path());
    std::ofstream(root_ + path) << text;
  }

  std::string root_;
};

TEST_F(DevicePathsTest, ExtraFilesAndDevMemUseTheOffset) {
  DevicePaths paths({"/dev/shm/simdev"}, root_);
  EXPECT_EQ(paths.PhysOf("/dev/shm/simdev", 0x2000), 0x2000u);
  EXPECT_EQ(paths.PhysOf("/dev/mem", 0xfed00000), 0xfed00000u);
  EXPECT_EQ(paths.PhysOf("/dev/shm/other", 0), std::nullopt);
  EXPECT_EQ(paths.PhysOf("/memfd:ring (deleted)", 0), std::nullopt);
}

TEST_F(DevicePathsTest, UioMapIsSelectedByPageOffset) {
  Write("/sys/class/uio/uio3/maps/map0/addr", "0xfe000000\n");
  Write("/sys/class/uio/uio3/maps/map1/addr", "0xfd100000\n");
  DevicePaths paths({}, root_);
  EXPECT_EQ(paths.PhysOf("/dev/uio3", 0), 0xfe000000u);
  EXPECT_EQ(paths.PhysOf("/dev/uio3", static_cast<uint64_t>(sysconf(_SC_PAGESIZE))), 0xfd100000u);
  EXPECT_EQ(paths.PhysOf("/dev/uio3", 2 * static_cast<uint64_t>(sysconf(_SC_PAGESIZE))), std::nullopt);
  EXPECT_EQ(paths.PhysOf("/dev/uio9", 0), std::nullopt);
  EXPECT_EQ(paths.PhysOf("/dev/uio3x", 0), std::nullopt);
}

TEST_F(DevicePathsTest, SysfsResourceUsesTheBarStart) {
  std::string dev = "/sys/devices/pci0000:00/0000:00:02.0";
  Write(dev + "/resource",
        "0x00000000f6000000 0x00000000f6ffffff 0x0000000000040200\n"
        "0x00000000e0000000 0x00000000efffffff 0x000000000014220c\n");
  DevicePaths paths({}, root_);
  EXPECT_EQ(paths.PhysOf(dev + "/resource0", 0x1000), 0xf6001000u);
  EXPECT_EQ(paths.PhysOf(dev + "/resource1_wc", 0), 0xe0000000u);
  EXPECT_EQ(paths.PhysOf(dev + "/resource5", 0), std::nullopt);
  EXPECT_EQ(paths.PhysOf(dev + "/resource", 0), std::nullopt);  // the table itself
  EXPECT_EQ(paths.PhysOf(dev + "/resource0x", 0), std::nullopt);
}

TEST_F(DevicePathsTest, VfioRegionIndexIsTheOffsetAbove40Bits) {
  Write("/sys/class/vfio-dev/vfio0/device/resource",
        "0x00000000f6000000 0x00000000f6ffffff 0x0000000000040200\n"
        "0x00000000f7000000 0x00000000f7003fff 0x0000000000040200\n");
  DevicePaths paths({}, root_);
  EXPECT_EQ(paths.PhysOf("/dev/vfio/devices/vfio0", (uint64_t{1} << 40) + 0x40), 0xf7000040u);
  EXPECT_EQ(paths.PhysOf("anon_inode:[vfio-device]", (uint64_t{2} << 40) + 0x40), 0x40u);
}

}  // namespace
}  // namespace udiag::mmiotrace
