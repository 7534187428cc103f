// Decode-only checks: direction, width, effective address, lock and the B' register fields,
// including facts Zydis does not state directly (implicit XCHG lock, bit-string addressing,
// POP's post-increment RSP base, FS-relative operands).
#include "mmio/emulator/emulator.h"

#include <asm/prctl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace udiag::mmio {
namespace {

class DecodeTest : public ::testing::Test {
 protected:
  // Decodes `bytes` placed in a buffer with RIP pointing at them.
  DecodeStatus DecodeBytes(std::vector<uint8_t> bytes) {
    code_ = std::move(bytes);
    code_.resize(code_.size() + 16, 0x90);
    uc_.uc_mcontext.gregs[REG_RIP] = reinterpret_cast<greg_t>(code_.data());
    return Decode(uc_, &decoded_);
  }
  void Set(int reg, uint64_t value) { uc_.uc_mcontext.gregs[reg] = static_cast<greg_t>(value); }
  uintptr_t ip() const { return reinterpret_cast<uintptr_t>(code_.data()); }

  ucontext_t uc_{};
  DecodedInstruction decoded_{};
  std::vector<uint8_t> code_;
};

TEST_F(DecodeTest, StoreWithDisplacement) {
  Set(REG_RAX, 0x10000);
  ASSERT_EQ(DecodeBytes({0x89, 0x48, 0x08}), DecodeStatus::kOk);  // mov [rax+8], ecx
  EXPECT_EQ(decoded_.address, 0x10008u);
  EXPECT_EQ(decoded_.width, 4);
  EXPECT_EQ(decoded_.direction, kWrite);
  EXPECT_FALSE(decoded_.locked);
  EXPECT_EQ(decoded_.length, 3);
  EXPECT_EQ(decoded_.base_greg, REG_RAX);
  EXPECT_EQ(decoded_.index_greg, -1);
  EXPECT_EQ(decoded_.displacement, 8);
  EXPECT_FALSE(decoded_.rip_relative);
  EXPECT_EQ(decoded_.second_address, 0u);
}

TEST_F(DecodeTest, BaseIndexScale) {
  Set(REG_R13, 0x20000);
  Set(REG_R14, 3);
  ASSERT_EQ(DecodeBytes({0x4f, 0x8b, 0x7c, 0xf5, 0xf8}), DecodeStatus::kOk);  // mov r15,[r13+r14*8-8]
  EXPECT_EQ(decoded_.address, 0x20000u + 24 - 8);
  EXPECT_EQ(decoded_.width, 8);
  EXPECT_EQ(decoded_.direction, kRead);
  EXPECT_EQ(decoded_.base_greg, REG_R13);
  EXPECT_EQ(decoded_.index_greg, REG_R14);
  EXPECT_EQ(decoded_.scale, 8);
}

TEST_F(DecodeTest, XchgIsImplicitlyLocked) {
  Set(REG_RDI, 0x3000);
  ASSERT_EQ(DecodeBytes({0x87, 0x07}), DecodeStatus::kOk);  // xchg [rdi], eax
  EXPECT_TRUE(decoded_.locked);
  EXPECT_EQ(decoded_.direction, kReadWrite);
}

TEST_F(DecodeTest, LockPrefix) {
  Set(REG_RDI, 0x3000);
  ASSERT_EQ(DecodeBytes({0xf0, 0x83, 0x0f, 0x01}), DecodeStatus::kOk);  // lock or dword [rdi], 1
  EXPECT_TRUE(decoded_.locked);
  EXPECT_EQ(decoded_.direction, kReadWrite);
  EXPECT_EQ(decoded_.width, 4);
}

TEST_F(DecodeTest, CompareAndTestOnlyRead) {
  Set(REG_RDI, 0x3000);
  ASSERT_EQ(DecodeBytes({0x39, 0x07}), DecodeStatus::kOk);  // cmp [rdi], eax
  EXPECT_EQ(decoded_.direction, kRead);
  ASSERT_EQ(DecodeBytes({0xf6, 0x07, 0x01}), DecodeStatus::kOk);  // test byte [rdi], 1
  EXPECT_EQ(decoded_.direction, kRead);
  EXPECT_EQ(decoded_.width, 1);
  ASSERT_EQ(DecodeBytes({0x0f, 0xa3, 0x07}), DecodeStatus::kOk);  // bt [rdi], eax
  EXPECT_EQ(decoded_.direction, kRead);
}

TEST_F(DecodeTest, BitStringOffsetSelectsTheUnit) {
  Set(REG_RDI, 0x4000);
  Set(REG_RSI, static_cast<uint64_t>(-65));
  ASSERT_EQ(DecodeBytes({0x48, 0x0f, 0xab, 0x37}), DecodeStatus::kOk);  // bts [rdi], rsi
  EXPECT_EQ(decoded_.address, 0x4000u - 16);  // bit -65 lives in the qword at -16
  EXPECT_EQ(decoded_.width, 8);
  Set(REG_RSI, 100);
  ASSERT_EQ(DecodeBytes({0x0f, 0xba, 0x2f, 0x64}), DecodeStatus::kOk);  // bts dword [rdi], 100
  EXPECT_EQ(decoded_.address, 0x4000u);  // immediate offsets stay within the operand
}

TEST_F(DecodeTest, RipRelative) {
  ASSERT_EQ(DecodeBytes({0x8b, 0x05, 0x10, 0, 0, 0}), DecodeStatus::kOk);  // mov eax, [rip+0x10]
  EXPECT_TRUE(decoded_.rip_relative);
  EXPECT_EQ(decoded_.base_greg, -1);
  EXPECT_EQ(decoded_.address, ip() + 6 + 0x10);
}

TEST_F(DecodeTest, MoffsAbsoluteAddress) {
  ASSERT_EQ(DecodeBytes({0xa1, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11}),
            DecodeStatus::kOk);  // movabs eax, [0x1122334455667788]
  EXPECT_EQ(decoded_.address, 0x1122334455667788u);
  EXPECT_EQ(decoded_.width, 4);
  EXPECT_EQ(decoded_.base_greg, -1);
}

TEST_F(DecodeTest, PopWithRspBaseUsesIncrementedRsp) {
  Set(REG_RSP, 0x7000);
  ASSERT_EQ(DecodeBytes({0x8f, 0x44, 0x24, 0x08}), DecodeStatus::kOk);  // pop qword [rsp+8]
  EXPECT_EQ(decoded_.address, 0x7000u + 8 + 8);
  EXPECT_EQ(decoded_.direction, kWrite);
}

TEST_F(DecodeTest, FsSegmentBase) {
  unsigned long fs_base = 0;
  ASSERT_EQ(syscall(SYS_arch_prctl, ARCH_GET_FS, &fs_base), 0);
  ASSERT_EQ(DecodeBytes({0x64, 0x8b, 0x04, 0x25, 0x08, 0, 0, 0}), DecodeStatus::kOk);
  EXPECT_EQ(decoded_.address, fs_base + 8);  // mov eax, fs:[8]
}

TEST_F(DecodeTest, AddressSizeOverrideTruncates) {
  Set(REG_RDI, 0xFFFFFFFF00001000);
  ASSERT_EQ(DecodeBytes({0x67, 0x8b, 0x07}), DecodeStatus::kOk);  // mov eax, [edi]
  EXPECT_EQ(decoded_.address, 0x1000u);
}

TEST_F(DecodeTest, StringMoveReportsBothOperands) {
  Set(REG_RSI, 0x5000);
  Set(REG_RDI, 0x6000);
  ASSERT_EQ(DecodeBytes({0xf3, 0x48, 0xa5}), DecodeStatus::kOk);  // rep movsq
  EXPECT_EQ(decoded_.address, 0x5000u);
  EXPECT_EQ(decoded_.second_address, 0x6000u);
  EXPECT_EQ(decoded_.direction, kRead);
  EXPECT_EQ(decoded_.width, 8);
}

TEST_F(DecodeTest, CmpxchgIsReadWrite) {
  Set(REG_RDI, 0x3000);
  ASSERT_EQ(DecodeBytes({0xf0, 0x0f, 0xb1, 0x0f}), DecodeStatus::kOk);  // lock cmpxchg [rdi], ecx
  EXPECT_EQ(decoded_.direction, kReadWrite);
  EXPECT_TRUE(decoded_.locked);
  ASSERT_EQ(DecodeBytes({0x48, 0x0f, 0xc7, 0x0f}), DecodeStatus::kOk);  // cmpxchg16b [rdi]
  EXPECT_EQ(decoded_.width, 16);
}

TEST_F(DecodeTest, NoMemoryOperand) {
  EXPECT_EQ(DecodeBytes({0x01, 0xd8}), DecodeStatus::kNoMemoryOperand);        // add eax, ebx
  EXPECT_EQ(DecodeBytes({0x48, 0x8d, 0x07}), DecodeStatus::kNoMemoryOperand);  // lea rax, [rdi]
}

TEST_F(DecodeTest, UnsupportedStillReportsTheAccess) {
  Set(REG_RDI, 0x3000);
  EXPECT_EQ(DecodeBytes({0x0f, 0xae, 0x3f}), DecodeStatus::kUnsupported);  // clflush [rdi]
  EXPECT_EQ(decoded_.address, 0x3000u);
  EXPECT_EQ(DecodeBytes({0xf7, 0x27}), DecodeStatus::kUnsupported);  // mul dword [rdi]
  EXPECT_EQ(decoded_.width, 4);
  EXPECT_EQ(decoded_.direction, kRead);
  EXPECT_EQ(DecodeBytes({0x50}), DecodeStatus::kUnsupported);  // push rax: only the stack
  EXPECT_EQ(DecodeBytes({0x0f, 0x6f, 0x07}), DecodeStatus::kUnsupported);  // movq mm0, [rdi]
  EXPECT_EQ(DecodeBytes({0x8e, 0x1f}), DecodeStatus::kUnsupported);        // mov ds, [rdi]
  EXPECT_EQ(DecodeBytes({0xa6}), DecodeStatus::kUnsupported);              // cmpsb
  EXPECT_EQ(DecodeBytes({0x67, 0xaa}), DecodeStatus::kUnsupported);        // stosb [edi]
}

TEST_F(DecodeTest, VectorNeedsTheRegistersInTheFrame) {
  // This context has no FPU state at all, so even XMM cannot be emulated.
  Set(REG_RDI, 0x3000);
  EXPECT_EQ(DecodeBytes({0xc5, 0xfe, 0x6f, 0x07}), DecodeStatus::kUnsupported);  // vmovdqu ymm0,[rdi]
  EXPECT_EQ(decoded_.width, 32);
  EXPECT_EQ(decoded_.direction, kRead);
  EXPECT_EQ(DecodeBytes({0x66, 0x0f, 0xd6, 0x1f}), DecodeStatus::kUnsupported);  // movq [rdi], xmm3
  EXPECT_EQ(decoded_.direction, kWrite);
  EXPECT_EQ(decoded_.width, 8);
}

TEST_F(DecodeTest, Invalid) {
  EXPECT_EQ(DecodeBytes({0x0f, 0x0b}), DecodeStatus::kNoMemoryOperand);  // ud2 decodes fine
  EXPECT_EQ(DecodeBytes({0xf0, 0x90}), DecodeStatus::kInvalid);          // lock nop
}

TEST_F(DecodeTest, InstructionEndingAtAnUnmappedPage) {
  const long page = sysconf(_SC_PAGESIZE);
  auto* pages = static_cast<uint8_t*>(
      mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(pages, MAP_FAILED);
  ASSERT_EQ(munmap(pages + page, page), 0);
  uint8_t* insn = pages + page - 2;
  insn[0] = 0x8b;  // mov eax, [rdi]
  insn[1] = 0x07;
  Set(REG_RDI, 0x3000);
  uc_.uc_mcontext.gregs[REG_RIP] = reinterpret_cast<greg_t>(insn);
  EXPECT_EQ(Decode(uc_, &decoded_), DecodeStatus::kOk);
  EXPECT_EQ(decoded_.length, 2);
  munmap(pages, page);
}

}  // namespace
}  // namespace udiag::mmio
