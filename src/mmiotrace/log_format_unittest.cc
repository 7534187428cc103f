#include "mmiotrace/log_format.h"

#include <gtest/gtest.h>

namespace udiag::mmiotrace {
namespace {

// The example of spec/kmmio.md §4 (composed to the kernel's exact formats).
constexpr uint64_t kSec = 1000000000;

Record Access(RecordKind kind, uint8_t width, uint64_t ts_ns, uint64_t phys, uint64_t value) {
  Record r;
  r.kind = kind;
  r.width = width;
  r.ts_ns = ts_ns;
  r.map_id = 1;
  r.phys = phys;
  r.value = value;
  return r;
}

TEST(LogFormat, Version) { EXPECT_EQ(VersionLine(), "VERSION 20070824\n"); }

TEST(LogFormat, ReadAndWriteLinesMatchTheKernelsExample) {
  EXPECT_EQ(FormatRecord(Access(RecordKind::kRead, 4, 1234 * kSec + 567912000, 0xf6000000, 0x168000a1)),
            "R 4 1234.567912 1 0xf6000000 0x168000a1 0x0 0\n");
  EXPECT_EQ(FormatRecord(Access(RecordKind::kWrite, 4, 1234 * kSec + 567930000, 0xf6000200, 0xffffffff)),
            "W 4 1234.567930 1 0xf6000200 0xffffffff 0x0 0\n");
}

TEST(LogFormat, ReadCarriesPcPidAndFullValue) {
  Record r = Access(RecordKind::kRead, 8, 5 * kSec + 7000, 0x1008, 0xffffffffffffffff);
  r.pc = 0x55d0c0de1234;
  r.pid = 4242;
  r.map_id = 12;
  EXPECT_EQ(FormatRecord(r), "R 8 5.000007 12 0x1008 0xffffffffffffffff 0x55d0c0de1234 4242\n");
}

TEST(LogFormat, MapUnmapUnknown) {
  Record map = Access(RecordKind::kMap, 0, 1234 * kSec + 567890000, 0xf6000000, 0xffffc90004000000);
  map.len = 0x1000000;
  EXPECT_EQ(FormatRecord(map), "MAP 1234.567890 1 0xf6000000 0xffffc90004000000 0x1000000 0x0 0\n");

  Record unmap = Access(RecordKind::kUnmap, 0, 1235 * kSec, 0xf6000000, 0);
  EXPECT_EQ(FormatRecord(unmap), "UNMAP 1235.000000 1 0x0 0\n");
  unmap.map_id = -1;
  EXPECT_EQ(FormatRecord(unmap), "UNMAP 1235.000000 -1 0x0 0\n");

  Record unknown = Access(RecordKind::kUnknown, 0, 1234 * kSec + 600100000, 0xf6009040, 0);
  unknown.opcode[0] = 0xf3;
  unknown.opcode[1] = 0x0f;
  unknown.opcode[2] = 0x7f;
  EXPECT_EQ(FormatRecord(unknown), "UNKNOWN 1234.600100 1 0xf6009040 f3,0f,7f 0x0 0\n");
}

TEST(LogFormat, TimestampRoundsDownToMicrosecondsAndTruncatesSecondsTo32Bits) {
  EXPECT_EQ(FormatMark(999, "x"), "MARK 0.000000 x\n");
  EXPECT_EQ(FormatMark(1999, "x"), "MARK 0.000001 x\n");
  EXPECT_EQ(FormatMark(((uint64_t{1} << 32) + 5) * kSec + 42000, "x"), "MARK 5.000042 x\n");
}

TEST(LogFormat, MarkKeepsItsOwnNewline) {
  EXPECT_EQ(FormatMark(1234 * kSec + 600001000, "X is up\n"), "MARK 1234.600001 X is up\n");
  EXPECT_EQ(FormatMark(1234 * kSec + 600001000, "X is up"), "MARK 1234.600001 X is up\n");
}

TEST(LogFormat, Lost) { EXPECT_EQ(FormatLost(17), "MARK 0.000000 Lost 17 events.\n"); }

TEST(LogFormat, PcidevFromProcBusPciDevicesWithDriver) {
  std::string proc =
      "0100\t10de2184\t10\t        f6000000\t        e000000c\t               0\t        f000000c\t"
      "               0\t            e001\t        f7000000\t         1000000\t        10000000\t"
      "               0\t         2000000\t               0\t              80\t           80000\tnvidia\n";
  EXPECT_EQ(PcidevLine(proc),
            "PCIDEV 0100 10de2184 10 f6000000 e000000c 0 f000000c 0 e001 f7000000 1000000 10000000 0 2000000 0 80 "
            "80000 nvidia\n");
}

TEST(LogFormat, PcidevWithoutDriverEndsWithASpace) {
  std::string proc = "0000\t80860d57\t0";
  for (int i = 0; i < 14; ++i) proc += "\t               0";
  proc += "\t\n";
  EXPECT_EQ(PcidevLine(proc), "PCIDEV 0000 80860d57 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 \n");
}

TEST(LogFormat, PcidevRejectsOtherText) {
  EXPECT_EQ(PcidevLine(""), std::nullopt);
  EXPECT_EQ(PcidevLine("0100\t10de2184\t10"), std::nullopt);
  std::string bad_hex = "0100\t10de2184\tzz";
  for (int i = 0; i < 14; ++i) bad_hex += "\t0";
  EXPECT_EQ(PcidevLine(bad_hex), std::nullopt);
}

TEST(LogFormat, PcidevLinesKeepsOrderAndSkipsJunk) {
  std::string one = "0008\t1af41045\t0";
  std::string two = "0010\t1af41042\t0";
  for (int i = 0; i < 14; ++i) {
    one += "\t1";
    two += "\t2";
  }
  EXPECT_EQ(PcidevLines(one + "\tvirtio-pci\njunk\n" + two + "\t\n"),
            "PCIDEV 0008 1af41045 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 virtio-pci\n"
            "PCIDEV 0010 1af41042 0 2 2 2 2 2 2 2 2 2 2 2 2 2 2 \n");
}

}  // namespace
}  // namespace udiag::mmiotrace
