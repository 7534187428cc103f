// Execute on fabricated contexts: the refusal paths (nothing may change when Execute returns
// false) and facts the native comparison cannot show (which accesses happen at all).
#include "mmio/emulator/emulator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace udiag::mmio {
namespace {

constexpr uintptr_t kBase = 0x10000;  // fake guest address of `memory`
constexpr size_t kSize = 8192;

struct FakeMemory {
  alignas(64) uint8_t memory[kSize];
  bool page_pieces_only = false;  // refuse ranges that cross a 4 KiB page
  uintptr_t refuse_from = ~uintptr_t{0};  // no view for addresses at or above this
  int calls = 0;
};

uint8_t* FakeAlias(void* ctx, uintptr_t addr, size_t len) {
  auto* fake = static_cast<FakeMemory*>(ctx);
  ++fake->calls;
  if (addr < kBase || addr + len > kBase + kSize || addr + len > fake->refuse_from) return nullptr;
  if (fake->page_pieces_only && addr / 4096 != (addr + len - 1) / 4096) return nullptr;
  return fake->memory + (addr - kBase);
}

class ExecuteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (size_t i = 0; i < kSize; ++i) fake_.memory[i] = static_cast<uint8_t>(i * 7 + 3);
    for (int r = 0; r < NGREG; ++r) Set(r, 0x1111111111111111ull * (r % 15 + 1));
    uc_.uc_mcontext.gregs[REG_EFL] = 0x202;
  }
  DecodeStatus DecodeBytes(std::vector<uint8_t> bytes) {
    code_ = std::move(bytes);
    code_.resize(code_.size() + 16, 0x90);
    uc_.uc_mcontext.gregs[REG_RIP] = reinterpret_cast<greg_t>(code_.data());
    return Decode(uc_, &decoded_);
  }
  // Execute must fail and leave the context and memory exactly as they were.
  void ExpectRefusedWithoutEffect() {
    const ucontext_t uc_before = uc_;
    std::vector<uint8_t> memory_before(fake_.memory, fake_.memory + kSize);
    ExecuteResult result;
    EXPECT_FALSE(Execute(decoded_, &uc_, FakeAlias, &fake_, &result));
    EXPECT_EQ(0, memcmp(&uc_before.uc_mcontext.gregs, &uc_.uc_mcontext.gregs, sizeof(uc_.uc_mcontext.gregs)));
    EXPECT_EQ(0, memcmp(memory_before.data(), fake_.memory, kSize));
  }
  void Set(int reg, uint64_t value) { uc_.uc_mcontext.gregs[reg] = static_cast<greg_t>(value); }
  uint64_t Get(int reg) const { return static_cast<uint64_t>(uc_.uc_mcontext.gregs[reg]); }

  FakeMemory fake_;
  ucontext_t uc_{};
  DecodedInstruction decoded_{};
  std::vector<uint8_t> code_;
};

TEST_F(ExecuteTest, LoadZeroExtendsAndAdvancesRip) {
  Set(REG_RDI, kBase + 16);
  ASSERT_EQ(DecodeBytes({0x8b, 0x07}), DecodeStatus::kOk);  // mov eax, [rdi]
  ExecuteResult result;
  ASSERT_TRUE(Execute(decoded_, &uc_, FakeAlias, &fake_, &result));
  uint32_t expected;
  memcpy(&expected, fake_.memory + 16, 4);
  EXPECT_EQ(Get(REG_RAX), expected);
  EXPECT_EQ(Get(REG_RIP), reinterpret_cast<uintptr_t>(code_.data()) + 2);
  EXPECT_TRUE(result.did_read);
  EXPECT_FALSE(result.did_write);
  EXPECT_EQ(0, memcmp(result.value_read, &expected, 4));
}

TEST_F(ExecuteTest, NoViewMeansNoEffect) {
  Set(REG_RDI, 0x900000);  // outside the fake memory
  ASSERT_EQ(DecodeBytes({0x89, 0x07}), DecodeStatus::kOk);  // mov [rdi], eax
  ExpectRefusedWithoutEffect();
}

TEST_F(ExecuteTest, LockedAccessSplitAcrossViewsIsRefused) {
  fake_.page_pieces_only = true;
  Set(REG_RDI, kBase + 4094);
  ASSERT_EQ(DecodeBytes({0xf0, 0x01, 0x07}), DecodeStatus::kOk);  // lock add [rdi], eax
  ExpectRefusedWithoutEffect();
  ASSERT_EQ(DecodeBytes({0x87, 0x07}), DecodeStatus::kOk);  // xchg [rdi], eax
  ExpectRefusedWithoutEffect();
  ASSERT_EQ(DecodeBytes({0x01, 0x07}), DecodeStatus::kOk);  // add [rdi], eax: fine in pieces
  ExecuteResult result;
  EXPECT_TRUE(Execute(decoded_, &uc_, FakeAlias, &fake_, &result));
}

TEST_F(ExecuteTest, MisalignedCmpxchg16bIsRefused) {
  Set(REG_RDI, kBase + 8);
  ASSERT_EQ(DecodeBytes({0xf0, 0x48, 0x0f, 0xc7, 0x0f}), DecodeStatus::kOk);  // lock cmpxchg16b [rdi]
  ExpectRefusedWithoutEffect();
}

TEST_F(ExecuteTest, PushWithoutStackViewDoesNotReadTheOperand) {
  Set(REG_RDI, kBase + 64);
  Set(REG_RSP, 0x900000);  // the stack has no view
  ASSERT_EQ(DecodeBytes({0xff, 0x37}), DecodeStatus::kOk);  // push qword [rdi]
  ExpectRefusedWithoutEffect();
}

TEST_F(ExecuteTest, MovsWithoutDestinationViewIsRefused) {
  Set(REG_RSI, kBase + 64);
  Set(REG_RDI, 0x900000);
  ASSERT_EQ(DecodeBytes({0xa4}), DecodeStatus::kOk);  // movsb
  ExpectRefusedWithoutEffect();
}

TEST_F(ExecuteTest, RepWithZeroCountAccessesNothing) {
  Set(REG_RDI, kBase + 64);
  Set(REG_RCX, 0);
  ASSERT_EQ(DecodeBytes({0xf3, 0xaa}), DecodeStatus::kOk);  // rep stosb
  ExecuteResult result;
  ASSERT_TRUE(Execute(decoded_, &uc_, FakeAlias, &fake_, &result));
  EXPECT_EQ(fake_.calls, 0);
  EXPECT_FALSE(result.did_write);
  EXPECT_EQ(Get(REG_RIP), reinterpret_cast<uintptr_t>(code_.data()) + 2);
  EXPECT_EQ(Get(REG_RDI), kBase + 64);
}

TEST_F(ExecuteTest, RepDoesOneElementPerCall) {
  Set(REG_RDI, kBase + 64);
  Set(REG_RCX, 3);
  Set(REG_RAX, 0xAB);
  ASSERT_EQ(DecodeBytes({0xf3, 0xaa}), DecodeStatus::kOk);  // rep stosb
  const auto ip = reinterpret_cast<uintptr_t>(code_.data());
  for (uint64_t left = 2;; --left) {
    ASSERT_EQ(Decode(uc_, &decoded_), DecodeStatus::kOk);
    ExecuteResult result;
    ASSERT_TRUE(Execute(decoded_, &uc_, FakeAlias, &fake_, &result));
    EXPECT_EQ(Get(REG_RCX), left);
    EXPECT_EQ(Get(REG_RIP), left ? ip : ip + 2);  // stays on the instruction until RCX is 0
    if (left == 0) break;
  }
  EXPECT_EQ(Get(REG_RDI), kBase + 67);
  EXPECT_EQ(fake_.memory[64], 0xAB);
  EXPECT_EQ(fake_.memory[66], 0xAB);
  EXPECT_NE(fake_.memory[67], 0xAB);
}

TEST_F(ExecuteTest, FailedLockedCmpxchgReportsTheWriteBack) {
  Set(REG_RDI, kBase + 32);
  Set(REG_RAX, 0);  // memory is not 0
  Set(REG_RCX, 0x55);
  ASSERT_EQ(DecodeBytes({0xf0, 0x0f, 0xb1, 0x0f}), DecodeStatus::kOk);  // lock cmpxchg [rdi], ecx
  ExecuteResult result;
  ASSERT_TRUE(Execute(decoded_, &uc_, FakeAlias, &fake_, &result));
  EXPECT_EQ(0, memcmp(result.value_read, fake_.memory + 32, 4));
  EXPECT_EQ(0, memcmp(result.value_written, fake_.memory + 32, 4));
  uint32_t old;
  memcpy(&old, fake_.memory + 32, 4);
  EXPECT_EQ(Get(REG_RAX), old);
  EXPECT_EQ(Get(REG_EFL) & 0x40, 0u);  // ZF clear
}

}  // namespace
}  // namespace udiag::mmio
