// `udiag mmiotrace` end to end: the simulated device, the example driver
// traced through the preload, the log checked line by line.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "consumer/private_daemon.h"
#include "integration_util.h"
#include "log_parse.h"

namespace udiag::mmiotrace_test {
namespace {

using integration::Bin;
using integration::ReadFileText;

// Registers of examples/mmio/simdev_regs.h the driver touches.
constexpr uint64_t kId = 0x0, kVersion = 0x4, kScratch = 0x8, kDoorbell = 0x10, kStatus = 0x14, kCounter = 0x18,
                   kResult = 0x1c, kLength = 0x20, kBuffer = 0x1000, kBufferBytes = 64;

struct Access {
  std::string kind;
  int width;
  uint64_t phys, value;
  bool operator==(const Access&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Access& a) {
  return out << a.kind << " " << a.width << " 0x" << std::hex << a.phys << " 0x" << a.value << std::dec;
}

// What mmio_driver says about itself on stderr.
struct DriverInfo {
  int pid = 0, child_pid = 0;
  uint64_t text_start = 0, text_end = 0, mapped_at = 0;
};

DriverInfo ParseDriverInfo(const std::string& err) {
  DriverInfo info;
  size_t at = 0;
  while (at < err.size()) {
    size_t nl = err.find('\n', at);
    std::string line = err.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? err.size() : nl + 1;
    int pid;
    uint64_t a, b;
    if (sscanf(line.c_str(), "mmio_driver: pid %d text 0x%" SCNx64 "-0x%" SCNx64, &pid, &a, &b) == 3 && !info.pid) {
      info = {pid, 0, a, b, 0};
    } else if (sscanf(line.c_str(), "mmio_driver: mapped at 0x%" SCNx64, &a) == 1 && !info.mapped_at) {
      info.mapped_at = a;
    } else if (sscanf(line.c_str(), "mmio_driver: child pid %d", &pid) == 1) {
      info.child_pid = pid;
    }
  }
  return info;
}

struct Traced {
  int status = -1;
  std::string log, err;
  std::vector<LogLine> lines;
};

class MmiotraceTest : public testing::Test {
 protected:
  void SetUp() override {
    // Traced processes that fork start a writer thread in the child; in a
    // TSan build TSan refuses that unless told (glibc allows it).
    setenv("TSAN_OPTIONS", "die_after_fork=0", /*overwrite=*/0);
    device_ = tmp_.path() + "/simdev";
    daemon_dir_ = tmp_.path() + "/udiag";
    simdev_ = integration::StartProcess({Bin("udiag-simdev"), device_}, {.stdout_path = tmp_.path() + "/simdev.out"});
    ASSERT_GT(simdev_, 0);
    ASSERT_TRUE(integration::PollUntil([&] { return ReadFileText(tmp_.path() + "/simdev.out").starts_with("ready"); }));
  }
  void TearDown() override {
    if (simdev_ > 0) {
      kill(simdev_, SIGTERM);
      integration::WaitExit(simdev_);
    }
  }

  // Runs `udiag mmiotrace --dir D --map DEVICE -o LOG [extra] -- command`.
  Traced Trace(const std::vector<std::string>& command, const std::vector<std::string>& extra = {}) {
    std::string log = tmp_.path() + "/trace.log", err = tmp_.path() + "/trace.err";
    std::vector<std::string> argv{Bin("udiag"), "mmiotrace", "--dir", daemon_dir_, "--map", device_, "-o", log};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    Traced traced;
    traced.status = integration::RunProgram(argv, {.stderr_path = err});
    traced.log = ReadFileText(log);
    traced.err = ReadFileText(err);
    traced.lines = ParseLog(traced.log);
    return traced;
  }

  std::vector<std::string> Driver(bool fork = false) {
    std::vector<std::string> argv{Bin("mmio_driver"), device_};
    if (fork) argv.push_back("--fork");
    return argv;
  }

  integration::TempDir tmp_;
  std::string device_, daemon_dir_;
  pid_t simdev_ = 0;
};

// The accesses of `pid` to the register page, without the STATUS polls.
std::vector<Access> RegisterAccesses(const std::vector<LogLine>& lines, int pid) {
  std::vector<Access> accesses;
  for (const LogLine& line : lines) {
    if ((line.kind != "R" && line.kind != "W") || line.pid != pid || line.phys >= kBuffer) continue;
    if (line.kind == "R" && line.phys == kStatus) continue;
    accesses.push_back({line.kind, line.width, line.phys, line.value});
  }
  return accesses;
}

// What mmio_driver does to the registers (examples/mmio/mmio_driver.c), when
// its checksum command is the device's `counter`th.
std::vector<Access> ExpectedRegisterAccesses(uint64_t counter) {
  return {
      {"R", 4, kId, 0x5d1e0001},
      {"R", 2, kVersion, 0x0102},
      {"R", 1, kId + 3, 0x5d},
      {"W", 8, kScratch, 0x1122334455667788},
      {"R", 8, kScratch, 0x1122334455667788},
      {"W", 1, kScratch, 0xaa},
      {"W", 2, kScratch + 2, 0xbbcc},
      {"R", 4, kScratch, 0xbbcc77aa},
      {"W", 4, kStatus, 0},
      {"W", 4, kLength, kBufferBytes},
      {"W", 4, kDoorbell, 1},
      {"R", 4, kResult, 0x1c60},  // sum of the bytes (i * 7 + 1) & 0xff, i < 64
      {"R", 4, kCounter, counter},
  };
}

TEST_F(MmiotraceTest, DriverIsTracedEndToEnd) {
  Traced traced = Trace(Driver());
  ASSERT_EQ(traced.status, 0) << traced.err;
  DriverInfo driver = ParseDriverInfo(traced.err);
  ASSERT_NE(driver.pid, 0) << traced.err;
  ASSERT_FALSE(traced.lines.empty());
  EXPECT_EQ(traced.lines[0].text, "VERSION 20070824");
  for (const LogLine& line : traced.lines) {
    if (line.kind != "VERSION" && line.kind != "PCIDEV") {
      EXPECT_TRUE(line.parsed) << line.text;
    }
  }

  // MAP with the mapping's phys (file offset 0), virt and length, then UNMAP.
  std::vector<const LogLine*> maps, unmaps;
  for (const LogLine& line : traced.lines) {
    if (line.kind == "MAP") maps.push_back(&line);
    if (line.kind == "UNMAP") unmaps.push_back(&line);
  }
  ASSERT_EQ(maps.size(), 1u) << traced.log;
  EXPECT_EQ(maps[0]->map_id, 1);
  EXPECT_EQ(maps[0]->phys, 0u);
  EXPECT_EQ(maps[0]->virt, driver.mapped_at);
  EXPECT_EQ(maps[0]->len, 0x2000u);
  EXPECT_EQ(maps[0]->pid, driver.pid);
  ASSERT_EQ(unmaps.size(), 1u);
  EXPECT_EQ(unmaps[0]->map_id, 1);
  EXPECT_EQ(unmaps[0]->pid, driver.pid);
  EXPECT_EQ(&traced.lines.back(), unmaps[0]);

  EXPECT_EQ(RegisterAccesses(traced.lines, driver.pid), ExpectedRegisterAccesses(1)) << traced.log;

  // Every register access was made by the driver's own code; the polling
  // loop read STATUS until it read DONE, and the memcpy wrote the buffer.
  std::map<uint64_t, uint8_t> buffer;
  int done_polls = 0;
  double last_ts = 0;
  for (const LogLine& line : traced.lines) {
    if (line.kind != "R" && line.kind != "W") continue;
    EXPECT_EQ(line.map_id, 1);
    EXPECT_GE(line.ts, last_ts) << line.text;
    last_ts = line.ts;
    if (line.phys < kBuffer) {
      EXPECT_GE(line.pc, driver.text_start) << line.text;
      EXPECT_LT(line.pc, driver.text_end) << line.text;
    }
    if (line.kind == "R" && line.phys == kStatus) {
      EXPECT_EQ(done_polls, 0) << "polled on after DONE: " << line.text;
      if (line.value == 1) {
        ++done_polls;
      } else {
        EXPECT_EQ(line.value, 0u) << line.text;
      }
    }
    if (line.kind == "W" && line.phys >= kBuffer) {
      for (int i = 0; i < line.width; ++i) buffer[line.phys - kBuffer + i] = static_cast<uint8_t>(line.value >> (8 * i));
    }
  }
  EXPECT_EQ(done_polls, 1);
  ASSERT_EQ(buffer.size(), kBufferBytes);
  for (uint64_t i = 0; i < kBufferBytes; ++i) EXPECT_EQ(buffer[i], static_cast<uint8_t>(i * 7 + 1)) << i;

  EXPECT_NE(traced.err.find("udiag: mmiotrace: "), std::string::npos);
  EXPECT_NE(traced.err.find(" 0 lost"), std::string::npos) << traced.err;
}

// The stepping modes execute the real instruction and the probe engine does
// not report its value (docs/mmio.md): those lines carry 0x0.
TEST_F(MmiotraceTest, EveryModeLogsTheSameAccesses) {
  uint64_t counter = 0;
  for (std::string mode : {"emulate", "rebase-step", "single-step"}) {
    Traced traced = Trace(Driver(), {"--mode", mode});
    ASSERT_EQ(traced.status, 0) << mode << "\n" << traced.err;
    DriverInfo driver = ParseDriverInfo(traced.err);
    std::vector<Access> expected = ExpectedRegisterAccesses(++counter);
    if (mode != "emulate") {
      for (Access& access : expected) access.value = 0;
    }
    EXPECT_EQ(RegisterAccesses(traced.lines, driver.pid), expected) << mode;
  }
}

TEST_F(MmiotraceTest, ForkedChildAccessesCarryItsPid) {
  Traced traced = Trace(Driver(/*fork=*/true));
  ASSERT_EQ(traced.status, 0) << traced.err;
  DriverInfo driver = ParseDriverInfo(traced.err);
  ASSERT_NE(driver.child_pid, 0) << traced.err;
  ASSERT_NE(driver.child_pid, driver.pid);
  std::vector<Access> child{{"W", 4, kScratch, 0xc0ffee}, {"R", 4, kId, 0x5d1e0001}};
  EXPECT_EQ(RegisterAccesses(traced.lines, driver.child_pid), child) << traced.log;
  // The child uses the mapping it inherited: map id 1, no MAP of its own.
  for (const LogLine& line : traced.lines) {
    if (line.pid == driver.child_pid) {
      EXPECT_EQ(line.map_id, 1) << line.text;
    }
  }
}

TEST_F(MmiotraceTest, ThreadsAreMergedInTimeOrderWithNothingLost) {
  constexpr int kThreads = 4, kReadsPerThread = 100;  // mmio_driver's SIMDEV_THREAD_READS
  Traced traced = Trace({Bin("mmio_driver"), device_, "--threads", std::to_string(kThreads)});
  ASSERT_EQ(traced.status, 0) << traced.err;
  int id_reads = 0;
  double last_ts = 0;
  for (const LogLine& line : traced.lines) {
    if (line.kind == "VERSION" || line.kind == "PCIDEV") continue;
    EXPECT_GE(line.ts, last_ts) << line.text;
    last_ts = line.ts;
    if (line.kind == "R" && line.phys == kId && line.width == 4) {
      EXPECT_EQ(line.value, 0x5d1e0001u);
      ++id_reads;
    }
  }
  EXPECT_EQ(id_reads, 1 + kThreads * kReadsPerThread);  // probe_device reads it once
  EXPECT_NE(traced.err.find(" 0 lost"), std::string::npos) << traced.err;
}

TEST_F(MmiotraceTest, UdiagMarkLandsBetweenTheAccesses) {
  std::string driver = Bin("mmio_driver") + " " + device_;
  std::string mark = Bin("udiag") + " mark --dir " + daemon_dir_ + " between the runs";
  Traced traced = Trace({"/bin/sh", "-c", driver + " && " + mark + " && " + driver});
  ASSERT_EQ(traced.status, 0) << traced.err;
  std::vector<std::string> order;
  for (const LogLine& line : traced.lines) {
    if (line.kind == "MAP" || line.kind == "UNMAP") order.push_back(line.kind + " " + std::to_string(line.map_id));
    if (line.kind == "MARK") {
      EXPECT_TRUE(line.parsed) << line.text;
      order.push_back("MARK " + line.mark);
    }
  }
  EXPECT_EQ(order, (std::vector<std::string>{"MAP 1", "UNMAP 1", "MARK between the runs", "MAP 2", "UNMAP 2"}))
      << traced.log;
  EXPECT_NE(traced.err.find("1 marks"), std::string::npos) << traced.err;
}

TEST_F(MmiotraceTest, MarkWithoutSessionFails) {
  std::string err = tmp_.path() + "/mark.err";
  EXPECT_EQ(integration::RunProgram({Bin("udiag"), "mark", "--dir", daemon_dir_, "nobody"}, {.stderr_path = err}), 1);
  EXPECT_NE(ReadFileText(err).find("no mmiotrace session"), std::string::npos);
}

TEST_F(MmiotraceTest, ExitStatusIsPassedThrough) {
  EXPECT_EQ(Trace({"/bin/sh", "-c", "exit 7"}).status, 7);
  EXPECT_EQ(Trace({"/bin/sh", "-c", "kill -TERM $$"}).status, 128 + SIGTERM);
  Traced missing = Trace({tmp_.path() + "/no-such-program"});
  EXPECT_EQ(missing.status, 127);
  Traced no_daemon = Trace({"/bin/true"});
  EXPECT_NE(no_daemon.err.find("events go nowhere"), std::string::npos) << no_daemon.err;
  EXPECT_EQ(no_daemon.log.substr(0, 17), "VERSION 20070824\n");
}

TEST_F(MmiotraceTest, SigtermToUdiagGoesToTheCommandAndTheSocketGoes) {
  pid_t udiag = integration::StartProcess(
      {Bin("udiag"), "mmiotrace", "--dir", daemon_dir_, "-o", "/dev/null", "--", "/bin/sleep", "30"},
      {.stderr_path = tmp_.path() + "/sigterm.err"});
  ASSERT_GT(udiag, 0);
  std::string socket = daemon_dir_ + "/mmiotrace-" + std::to_string(udiag) + ".sock";
  std::string children = "/proc/" + std::to_string(udiag) + "/task/" + std::to_string(udiag) + "/children";
  ASSERT_TRUE(integration::PollUntil([&] { return !ReadFileText(children).empty(); }));  // sleep runs
  kill(udiag, SIGTERM);
  EXPECT_EQ(integration::WaitExit(udiag), 128 + SIGTERM);  // sleep's status
  EXPECT_NE(access(socket.c_str(), F_OK), 0);
  EXPECT_NE(access((socket + ".ids").c_str(), F_OK), 0);
}

TEST_F(MmiotraceTest, AccessesAreEventsInUdiagd) {
  std::string error;
  auto daemon = consumer::PrivateDaemon::Start(&error);
  ASSERT_TRUE(daemon) << error;
  daemon_dir_ = daemon->dir();
  std::string out = tmp_.path() + "/events.out", err = tmp_.path() + "/events.err";
  std::vector<std::string> argv{Bin("udiag"), "trace", "--dir", daemon_dir_, "-e", "mmiotrace_*", "--",
                                Bin("udiag"), "mmiotrace", "--dir", daemon_dir_, "--map", device_,
                                "-o", tmp_.path() + "/trace.log", "--"};
  for (const std::string& arg : Driver()) argv.push_back(arg);
  ASSERT_EQ(integration::RunProgram(argv, {.stdout_path = out, .stderr_path = err}), 0) << ReadFileText(err);
  std::string events = ReadFileText(out);
  EXPECT_EQ(ReadFileText(err).find("events go nowhere"), std::string::npos);
  EXPECT_NE(events.find("mmiotrace_map:"), std::string::npos) << events;
  EXPECT_NE(events.find("mmiotrace_rw:"), std::string::npos) << events;
  // The 8-byte write of SCRATCH, as a field of the event.
  EXPECT_NE(events.find("value=0x1122334455667788 "), std::string::npos) << events;
}

}  // namespace
}  // namespace udiag::mmiotrace_test
