// The historic ABIs through the library itself, also under the sanitizers:
// 24-byte registrations and the status page's two readings, and the RFC's
// /dev/udiag descriptor semantics. Enabled writes are left to the drop-in
// tests (tests/dropin), which run them through the preload: with the
// library's objects linked into an executable, GCC 12's UBSan misreports the
// write path's initial-exec TLS ring as a null pointer.
#include "producer/legacy_abi.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "producer/daemon_test_fixture.h"
#include "udiag/udiag.h"

namespace {

using udiag::producer::legacy::MapStatusPage;

struct UserRegV1 {
  uint32_t size;
  uint64_t name_args;
  uint32_t status_index;
  uint32_t write_index;
};

bool ByteModel(const volatile uint8_t* page, uint32_t n) { return page[n] != 0; }
bool BitModel(const volatile uint8_t* page, uint32_t n) { return page[n >> 3] & (1 << (n & 7)); }

using LegacyAbiTest = udiag::producer::DaemonTest;

TEST_F(LegacyAbiTest, StatusPageMapsOnlyOneSharedReadOnlyPage) {
  long page = sysconf(_SC_PAGESIZE);
  EXPECT_EQ(MapStatusPage(nullptr, 2 * page, PROT_READ, MAP_SHARED, 0, false), MAP_FAILED);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(MapStatusPage(nullptr, page, PROT_READ, MAP_PRIVATE, 0, false), MAP_FAILED);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(MapStatusPage(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED, 0, false), MAP_FAILED);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(MapStatusPage(nullptr, page, PROT_READ, MAP_SHARED, page, false), MAP_FAILED);
  EXPECT_EQ(errno, EINVAL);
  // The RFC said EFAULT for a wrong size.
  EXPECT_EQ(MapStatusPage(nullptr, 2 * page, PROT_READ, MAP_SHARED, 0, true), MAP_FAILED);
  EXPECT_EQ(errno, EFAULT);
  void* view = MapStatusPage(nullptr, page, PROT_READ, MAP_SHARED, 0, false);
  ASSERT_NE(view, MAP_FAILED);
  udiag::producer::legacy::ForgetStatusViews(view, page);
  EXPECT_EQ(munmap(view, page), 0);
}

TEST_F(LegacyAbiTest, V1RegistrationKeepsByteAndBitReadingsInStep) {
  long page_size = sysconf(_SC_PAGESIZE);
  auto* page = static_cast<const volatile uint8_t*>(MapStatusPage(nullptr, page_size, PROT_READ, MAP_SHARED, 0, false));
  ASSERT_NE(page, MAP_FAILED);
  int fd = udiag_open();
  ASSERT_GE(fd, 0);
  UserRegV1 a{sizeof(UserRegV1), reinterpret_cast<uintptr_t>("legacy_a u32 x"), 0, 0};
  UserRegV1 b{sizeof(UserRegV1), reinterpret_cast<uintptr_t>("legacy_b u64 y"), 0, 0};
  ASSERT_EQ(udiag_ioctl(fd, DIAG_IOCSREG, &a), 0) << strerror(errno);
  ASSERT_EQ(udiag_ioctl(fd, DIAG_IOCSREG, &b), 0) << strerror(errno);
  ASSERT_NE(a.status_index, b.status_index);
  for (uint32_t n : {a.status_index, b.status_index}) {
    EXPECT_EQ(n % 8, 0u);
    EXPECT_LT(n, static_cast<uint32_t>(page_size));
    EXPECT_FALSE(ByteModel(page, n));
    EXPECT_FALSE(BitModel(page, n));
  }
  SetEnabled("legacy_a", true);
  EXPECT_TRUE(ByteModel(page, a.status_index));
  EXPECT_TRUE(BitModel(page, a.status_index));
  EXPECT_FALSE(ByteModel(page, b.status_index));
  EXPECT_FALSE(BitModel(page, b.status_index));

  SetEnabled("legacy_a", false);
  EXPECT_FALSE(ByteModel(page, a.status_index));
  EXPECT_FALSE(BitModel(page, a.status_index));

  // Closing the only descriptor ends the registrations: the events go away.
  EXPECT_EQ(udiag_close(fd), 0);
  int del = udiag_open();
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = udiag_ioctl(del, DIAG_IOCSDEL, const_cast<char*>("legacy_a")) == 0 || errno == ENOENT;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone);
  udiag_close(del);
  munmap(const_cast<uint8_t*>(page), page_size);
}

TEST_F(LegacyAbiTest, RfcDescriptorCarriesOneEventWrittenAsBytes) {
  using udiag::producer::legacy::kRfcIocsReg;
  using udiag::producer::legacy::RfcIoctl;
  using udiag::producer::legacy::RfcWrite;
  int fd = udiag_open();
  ASSERT_GE(fd, 0);
  EXPECT_EQ(RfcWrite(fd, "x", 1), -1);
  EXPECT_EQ(errno, ENOENT);
  EXPECT_EQ(RfcIoctl(fd, kRfcIocsReg, const_cast<char*>("bad name")), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(RfcIoctl(fd, DIAG_IOCSUNREG, nullptr), -1);
  EXPECT_EQ(errno, ENOTTY);
  int index = RfcIoctl(fd, kRfcIocsReg, const_cast<char*>("rfc_event"));
  ASSERT_GT(index, 0) << strerror(errno);
  EXPECT_EQ(RfcIoctl(fd, kRfcIocsReg, const_cast<char*>("rfc_other")), -1);
  EXPECT_EQ(errno, EMFILE);
  EXPECT_EQ(RfcWrite(fd, "", 0), -1);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(RfcWrite(fd, "dropped", 7), 7);  // nobody traces it
  // The event is the RFC's: a length and the bytes.
  auto format = consumer_->Read("events/user_events/rfc_event/format");
  ASSERT_TRUE(format.ok());
  EXPECT_NE(format->find("field:int datalen;"), std::string::npos) << *format;
  EXPECT_NE(format->find("field:__data_loc char[] data;"), std::string::npos) << *format;
  udiag_close(fd);
}

}  // namespace
