// The probe contract of include/udiag/mmio.h in each mode: what handlers see
// for loads and stores of each width, probe layout, registration errors.
#include <emmintrin.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <gtest/gtest.h>

#include "mmio/probe_test_support.h"
#include "udiag/mmio.h"

namespace udiag::mmio::testing {
namespace {

// Each helper performs exactly one access and reports the instruction's address.
template <typename T>
T Load(const void* p, uintptr_t* ip) {
  T value;
  asm volatile("lea 1f(%%rip), %1\n1: mov (%2), %0" : "=&q"(value), "=&r"(*ip) : "r"(p) : "memory");
  return value;
}
template <typename T>
void Store(void* p, T value, uintptr_t* ip) {
  asm volatile("lea 1f(%%rip), %0\n1: mov %1, (%2)" : "=&r"(*ip) : "q"(value), "r"(p) : "memory");
}
__m128i Load16(const void* p, uintptr_t* ip) {
  __m128i value;
  asm volatile("lea 1f(%%rip), %1\n1: movdqu (%2), %0" : "=x"(value), "=&r"(*ip) : "r"(p) : "memory");
  return value;
}
void Store16(void* p, __m128i value, uintptr_t* ip) {
  asm volatile("lea 1f(%%rip), %0\n1: movdqu %1, (%2)" : "=&r"(*ip) : "x"(value), "r"(p) : "memory");
}

std::string ModeName(const ::testing::TestParamInfo<udiag_mmio_mode>& info) {
  switch (info.param) {
    case UDIAG_MMIO_EMULATE: return "Emulate";
    case UDIAG_MMIO_REBASE_STEP: return "RebaseStep";
    case UDIAG_MMIO_SINGLE_STEP: return "SingleStep";
  }
  return "Unknown";
}

class ProbeTest : public ::testing::TestWithParam<udiag_mmio_mode> {
 protected:
  void SetUp() override {
    ASSERT_NE(pages_.base(), nullptr);
    for (size_t i = 0; i < pages_.len(); ++i) pages_.base()[i] = static_cast<uint8_t>(i * 7 + 1);
    ASSERT_EQ(udiag_mmio_set_mode(GetParam()), 0);
  }
  void TearDown() override { udiag_mmio_set_mode(UDIAG_MMIO_EMULATE); }

  // Checks the one recorded access against what the test did.
  void ExpectAccess(size_t index, const void* addr, uintptr_t ip, uint32_t width, uint32_t dir,
                    const void* value) {
    const udiag_mmio_access& a = recorder_.posts[index];
    EXPECT_EQ(a.addr, reinterpret_cast<uintptr_t>(addr));
    EXPECT_EQ(a.ip, ip);
    EXPECT_EQ(a.width, width);
    EXPECT_EQ(a.dir, dir);
    EXPECT_EQ(a.decoded, 1);
    EXPECT_EQ(a.tid, gettid());
    EXPECT_GT(a.insn_len, 0u);
    EXPECT_EQ(memcmp(a.insn, reinterpret_cast<const void*>(ip), a.insn_len), 0);
    const uint32_t expected_how = GetParam() == UDIAG_MMIO_EMULATE     ? UDIAG_MMIO_HOW_EMULATED
                                  : GetParam() == UDIAG_MMIO_REBASE_STEP ? UDIAG_MMIO_HOW_REBASED
                                                                         : UDIAG_MMIO_HOW_STEPPED;
    EXPECT_EQ(a.how, expected_how);
    // Only emulation knows the value; the stepping designs say so.
    EXPECT_EQ(a.value_valid, GetParam() == UDIAG_MMIO_EMULATE ? 1 : 0);
    if (a.value_valid) {
      EXPECT_EQ(memcmp(a.value, value, width), 0);
    }
  }

  SharedPages pages_{3};
  Recorder recorder_;
};

uint8_t Pattern(size_t offset) { return static_cast<uint8_t>(offset * 7 + 1); }

TEST_P(ProbeTest, LoadsSeeAddressIpWidthDirectionAndValue) {
  uint8_t* area = pages_.page(1) + 64;
  udiag_mmio_probe probe = recorder_.MakeProbe(area, 64);
  ASSERT_EQ(udiag_mmio_register_probe(&probe), 0);
  uintptr_t ip[5];
  const uint8_t v1 = Load<uint8_t>(area + 1, &ip[0]);
  const uint16_t v2 = Load<uint16_t>(area + 2, &ip[1]);
  const uint32_t v4 = Load<uint32_t>(area + 4, &ip[2]);
  const uint64_t v8 = Load<uint64_t>(area + 8, &ip[3]);
  const __m128i v16 = Load16(area + 16, &ip[4]);
  udiag_mmio_unregister_probe(&probe);

  uint8_t expected[32];
  for (size_t i = 0; i < sizeof(expected); ++i) expected[i] = Pattern(area - pages_.base() + i);
  EXPECT_EQ(memcmp(&v1, expected + 1, 1), 0);
  EXPECT_EQ(memcmp(&v2, expected + 2, 2), 0);
  EXPECT_EQ(memcmp(&v4, expected + 4, 4), 0);
  EXPECT_EQ(memcmp(&v8, expected + 8, 8), 0);
  EXPECT_EQ(memcmp(&v16, expected + 16, 16), 0);
  ASSERT_EQ(recorder_.post_calls.load(), 5u);
  EXPECT_EQ(recorder_.pre_calls.load(), 5u);
  ExpectAccess(0, area + 1, ip[0], 1, UDIAG_MMIO_READ, expected + 1);
  ExpectAccess(1, area + 2, ip[1], 2, UDIAG_MMIO_READ, expected + 2);
  ExpectAccess(2, area + 4, ip[2], 4, UDIAG_MMIO_READ, expected + 4);
  ExpectAccess(3, area + 8, ip[3], 8, UDIAG_MMIO_READ, expected + 8);
  ExpectAccess(4, area + 16, ip[4], 16, UDIAG_MMIO_READ, expected + 16);
}

TEST_P(ProbeTest, StoresSeeAddressIpWidthDirectionAndValue) {
  uint8_t* area = pages_.page(1) + 64;
  udiag_mmio_probe probe = recorder_.MakeProbe(area, 64);
  ASSERT_EQ(udiag_mmio_register_probe(&probe), 0);
  const uint8_t v1 = 0xA1;
  const uint16_t v2 = 0xB2B3;
  const uint32_t v4 = 0xC4C5C6C7;
  const uint64_t v8 = 0xD8D9DADBDCDDDEDF;
  const __m128i v16 = _mm_set_epi64x(0x0102030405060708, 0x1112131415161718);
  uintptr_t ip[5];
  Store<uint8_t>(area + 1, v1, &ip[0]);
  Store<uint16_t>(area + 2, v2, &ip[1]);
  Store<uint32_t>(area + 4, v4, &ip[2]);
  Store<uint64_t>(area + 8, v8, &ip[3]);
  Store16(area + 16, v16, &ip[4]);
  udiag_mmio_unregister_probe(&probe);

  EXPECT_EQ(memcmp(area + 1, &v1, 1), 0);
  EXPECT_EQ(memcmp(area + 2, &v2, 2), 0);
  EXPECT_EQ(memcmp(area + 4, &v4, 4), 0);
  EXPECT_EQ(memcmp(area + 8, &v8, 8), 0);
  EXPECT_EQ(memcmp(area + 16, &v16, 16), 0);
  EXPECT_EQ(area[0], Pattern(area - pages_.base()));  // neighbours untouched
  ASSERT_EQ(recorder_.post_calls.load(), 5u);
  ExpectAccess(0, area + 1, ip[0], 1, UDIAG_MMIO_WRITE, &v1);
  ExpectAccess(1, area + 2, ip[1], 2, UDIAG_MMIO_WRITE, &v2);
  ExpectAccess(2, area + 4, ip[2], 4, UDIAG_MMIO_WRITE, &v4);
  ExpectAccess(3, area + 8, ip[3], 8, UDIAG_MMIO_WRITE, &v8);
  ExpectAccess(4, area + 16, ip[4], 16, UDIAG_MMIO_WRITE, &v16);
}

TEST_P(ProbeTest, SeveralProbesOnOnePageEachSeeOnlyTheirAccesses) {
  uint8_t* page = pages_.page(1);
  Recorder other;
  udiag_mmio_probe first = recorder_.MakeProbe(page + 8, 8);
  udiag_mmio_probe second = other.MakeProbe(page + 100, 4);
  ASSERT_EQ(udiag_mmio_register_probe(&first), 0);
  ASSERT_EQ(udiag_mmio_register_probe(&second), 0);
  uintptr_t ip;
  Store<uint32_t>(page + 100, 0x12345678, &ip);
  const uint64_t inside = Load<uint64_t>(page + 8, &ip);
  // Same page, outside both probes: performed, no handler (kmmio's behaviour).
  const uint32_t outside = Load<uint32_t>(page + 2000, &ip);
  udiag_mmio_unregister_probe(&second);
  const uint16_t after = Load<uint16_t>(page + 8, &ip);  // the first probe keeps the page armed
  udiag_mmio_unregister_probe(&first);

  uint8_t expected[8];
  for (size_t i = 0; i < 8; ++i) expected[i] = Pattern(kPage + 8 + i);
  EXPECT_EQ(memcmp(&inside, expected, 8), 0);
  EXPECT_EQ(memcmp(&after, expected, 2), 0);
  uint32_t expected_outside;
  for (size_t i = 0; i < 4; ++i) reinterpret_cast<uint8_t*>(&expected_outside)[i] = Pattern(kPage + 2000 + i);
  EXPECT_EQ(outside, expected_outside);
  EXPECT_EQ(*reinterpret_cast<uint32_t*>(page + 100), 0x12345678u);
  ASSERT_EQ(recorder_.post_calls.load(), 2u);
  EXPECT_EQ(recorder_.posts[0].addr, reinterpret_cast<uintptr_t>(page + 8));
  EXPECT_EQ(recorder_.posts[1].width, 2u);
  ASSERT_EQ(other.post_calls.load(), 1u);
  EXPECT_EQ(other.posts[0].addr, reinterpret_cast<uintptr_t>(page + 100));
  EXPECT_EQ(other.posts[0].dir, static_cast<uint32_t>(UDIAG_MMIO_WRITE));
}

TEST_P(ProbeTest, ProbeSpanningPagesSeesBothPagesAndStraddlingAccesses) {
  uint8_t* end_of_first = pages_.page(1) - 8;
  udiag_mmio_probe probe = recorder_.MakeProbe(end_of_first, 16);
  ASSERT_EQ(udiag_mmio_register_probe(&probe), 0);
  uintptr_t ip[3];
  const uint32_t low = Load<uint32_t>(end_of_first, &ip[0]);
  const uint32_t high = Load<uint32_t>(pages_.page(1) + 4, &ip[1]);
  Store<uint64_t>(pages_.page(1) - 4, 0x0123456789abcdef, &ip[2]);  // crosses the page boundary
  udiag_mmio_unregister_probe(&probe);

  uint32_t expected_low, expected_high;
  for (size_t i = 0; i < 4; ++i) {
    reinterpret_cast<uint8_t*>(&expected_low)[i] = Pattern(kPage - 8 + i);
    reinterpret_cast<uint8_t*>(&expected_high)[i] = Pattern(kPage + 4 + i);
  }
  EXPECT_EQ(low, expected_low);
  EXPECT_EQ(high, expected_high);
  uint64_t straddling;
  memcpy(&straddling, pages_.page(1) - 4, sizeof(straddling));
  EXPECT_EQ(straddling, 0x0123456789abcdefu);
  ASSERT_EQ(recorder_.post_calls.load(), 3u);
  const uint64_t stored = 0x0123456789abcdef;
  ExpectAccess(0, end_of_first, ip[0], 4, UDIAG_MMIO_READ, &expected_low);
  ExpectAccess(1, pages_.page(1) + 4, ip[1], 4, UDIAG_MMIO_READ, &expected_high);
  ExpectAccess(2, pages_.page(1) - 4, ip[2], 8, UDIAG_MMIO_WRITE, &stored);
}

TEST_P(ProbeTest, UnprobedPagesOfTheSameMappingAreUnaffected) {
  udiag_mmio_probe probe = recorder_.MakeProbe(pages_.page(1), 4);
  ASSERT_EQ(udiag_mmio_register_probe(&probe), 0);
  pages_.page(0)[5] = 42;
  pages_.page(2)[5] = 43;
  EXPECT_EQ(pages_.page(0)[5] + pages_.page(2)[5], 85);
  udiag_mmio_unregister_probe(&probe);
  EXPECT_EQ(recorder_.pre_calls.load(), 0u);
  EXPECT_EQ(recorder_.post_calls.load(), 0u);
}

TEST_P(ProbeTest, RegistrationErrors) {
  uint8_t* page = pages_.page(1);
  udiag_mmio_probe empty = recorder_.MakeProbe(page, 0);
  EXPECT_EQ(udiag_mmio_register_probe(&empty), -EINVAL);
  void* hole = mmap(nullptr, kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(hole, MAP_FAILED);
  munmap(hole, kPage);
  udiag_mmio_probe unmapped = recorder_.MakeProbe(hole, 8);
  EXPECT_EQ(udiag_mmio_register_probe(&unmapped), -EINVAL);

  udiag_mmio_probe probe = recorder_.MakeProbe(page + 16, 4096);  // into page 2
  ASSERT_EQ(udiag_mmio_register_probe(&probe), 0);
  EXPECT_EQ(udiag_mmio_register_probe(&probe), -EEXIST);
  udiag_mmio_probe overlapping = recorder_.MakeProbe(pages_.page(2) + 8, 4);  // overlaps on its 2nd page
  EXPECT_EQ(udiag_mmio_register_probe(&overlapping), -EEXIST);
  udiag_mmio_probe adjacent = recorder_.MakeProbe(page + 8, 8);  // ends where `probe` begins
  EXPECT_EQ(udiag_mmio_register_probe(&adjacent), 0);
  EXPECT_EQ(udiag_mmio_set_mode(UDIAG_MMIO_SINGLE_STEP), -EBUSY);
  udiag_mmio_unregister_probe(&adjacent);
  udiag_mmio_unregister_probe(&probe);
  udiag_mmio_unregister_probe(&probe);  // unknown: ignored
  EXPECT_EQ(udiag_mmio_set_mode(static_cast<udiag_mmio_mode>(7)), -EINVAL);
}

TEST_P(ProbeTest, PrivateAnonymousMemoryNeedsSingleStep) {
  void* mem = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  static_cast<uint32_t*>(mem)[1] = 77;
  udiag_mmio_probe probe = recorder_.MakeProbe(mem, 16);
  if (GetParam() != UDIAG_MMIO_SINGLE_STEP) {
    EXPECT_EQ(udiag_mmio_register_probe(&probe), -ENOTSUP);
  } else {
    ASSERT_EQ(udiag_mmio_register_probe(&probe), 0);
    uintptr_t ip;
    EXPECT_EQ(Load<uint32_t>(static_cast<uint8_t*>(mem) + 4, &ip), 77u);
    udiag_mmio_unregister_probe(&probe);
    EXPECT_EQ(recorder_.post_calls.load(), 1u);
  }
  munmap(mem, kPage);
}

TEST_P(ProbeTest, DeclaredRegionGivesTheAliasView) {
  int fd = memfd_create("udiag-mmio-region", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, kPage), 0);
  void* mem = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ASSERT_NE(mem, MAP_FAILED);
  // A private file mapping has no alias view the library can find by itself;
  // declare the fd as its view (clean private pages show the file).
  udiag_mmio_probe probe = recorder_.MakeProbe(mem, 8);
  if (GetParam() != UDIAG_MMIO_SINGLE_STEP) {
    EXPECT_EQ(udiag_mmio_register_probe(&probe), -ENOTSUP);
  }
  EXPECT_EQ(udiag_mmio_register_region(static_cast<uint8_t*>(mem) + 8, kPage - 8, fd, 8), -EINVAL);
  ASSERT_EQ(udiag_mmio_register_region(mem, kPage, fd, 0), 0);
  EXPECT_EQ(udiag_mmio_register_region(mem, kPage, fd, 0), -EEXIST);
  close(fd);
  ASSERT_EQ(udiag_mmio_register_probe(&probe), 0);
  EXPECT_EQ(udiag_mmio_unregister_region(mem), GetParam() == UDIAG_MMIO_SINGLE_STEP ? 0 : -EBUSY);
  uintptr_t ip;
  EXPECT_EQ(Load<uint32_t>(mem, &ip), 0u);
  udiag_mmio_unregister_probe(&probe);
  EXPECT_EQ(recorder_.post_calls.load(), 1u);
  udiag_mmio_unregister_region(mem);
  EXPECT_EQ(udiag_mmio_unregister_region(mem), -ENOENT);
  munmap(mem, kPage);
}

// `mov (%rax), %ax` merges the loaded bits into its own address register:
// B' must not move that register, so it falls back to single-stepping.
TEST_P(ProbeTest, LoadIntoItsOwnAddressRegisterGetsTheRightValue) {
  uint8_t* area = pages_.page(1) + 64;
  udiag_mmio_probe probe = recorder_.MakeProbe(area, 16);
  ASSERT_EQ(udiag_mmio_register_probe(&probe), 0);
  uint64_t reg = reinterpret_cast<uintptr_t>(area + 2);
  asm volatile("mov (%0), %w0" : "+r"(reg) : : "memory");
  udiag_mmio_unregister_probe(&probe);
  const uint64_t loaded = Pattern(area + 2 - pages_.base()) | Pattern(area + 3 - pages_.base()) << 8;
  EXPECT_EQ(reg, (reinterpret_cast<uintptr_t>(area + 2) & ~uint64_t{0xffff}) | loaded);
  ASSERT_EQ(recorder_.post_calls.load(), 1u);
  EXPECT_EQ(recorder_.posts[0].how, GetParam() == UDIAG_MMIO_EMULATE ? UDIAG_MMIO_HOW_EMULATED : UDIAG_MMIO_HOW_STEPPED);
  EXPECT_EQ(recorder_.posts[0].width, 2u);
}

TEST_P(ProbeTest, ForkedChildKeepsTracingWithItsOwnThreadId) {
  udiag_mmio_probe probe = recorder_.MakeProbe(pages_.page(0), 8);
  ASSERT_EQ(udiag_mmio_register_probe(&probe), 0);
  uintptr_t ip;
  Load<uint32_t>(pages_.page(0), &ip);  // caches the parent's thread id
  const pid_t child = fork();
  if (child == 0) {
    Load<uint32_t>(pages_.page(0), &ip);
    _exit(recorder_.post_calls.load() == 2 && recorder_.posts[1].tid == gettid() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  udiag_mmio_unregister_probe(&probe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(recorder_.posts[0].tid, gettid());
}

INSTANTIATE_TEST_SUITE_P(Modes, ProbeTest,
                         ::testing::Values(UDIAG_MMIO_EMULATE, UDIAG_MMIO_REBASE_STEP, UDIAG_MMIO_SINGLE_STEP),
                         ModeName);

}  // namespace
}  // namespace udiag::mmio::testing
