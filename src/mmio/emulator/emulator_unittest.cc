// Instruction-by-instruction equivalence: each supported form runs natively on plain memory and
// under emulation on a PROT_NONE view of the same memory, from the same random machine state;
// registers, flags, vector/opmask registers and memory must end up identical, and the decoded
// width/direction must be right.
#include <asm/prctl.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <functional>

#include "mmio/emulator/emulator_test_expect.h"
#include "mmio/emulator/emulator_test_harness.h"

namespace udiag::mmio::testing {
namespace {

// --- tier 0: what mmiotrace decodes ---
UDIAG_TEST_INSN(MovLoad8, "mov 5(%rdi), %cl")
UDIAG_TEST_INSN(MovLoadAh, "mov 5(%rdi), %ah")
UDIAG_TEST_INSN(MovLoad16, "mov 6(%rdi), %r9w")
UDIAG_TEST_INSN(MovLoad32, "mov 8(%rdi,%rsi,4), %eax")
UDIAG_TEST_INSN(MovLoad64, "mov -8(%r13,%r14,8), %r15")
UDIAG_TEST_INSN(MovStore8Bh, "mov %bh, 3(%rdi)")
UDIAG_TEST_INSN(MovStore8Sil, "mov %sil, 3(%rdi)")
UDIAG_TEST_INSN(MovStore16, "mov %dx, 2(%rdi)")
UDIAG_TEST_INSN(MovStore32, "mov %r10d, (%rdi)")
UDIAG_TEST_INSN(MovStore64, "mov %rbx, 16(%rdi)")
UDIAG_TEST_INSN(MovStoreImm8, "movb $0x9c, 7(%rdi)")
UDIAG_TEST_INSN(MovStoreImm16, "movw $0x1234, 7(%rdi)")
UDIAG_TEST_INSN(MovStoreImm32, "movl $0x89abcdef, 7(%rdi)")
UDIAG_TEST_INSN(MovStoreImm64, "movq $-5, 8(%rdi)")
UDIAG_TEST_INSN(MovzxByte, "movzbl 1(%rdi), %r11d")
UDIAG_TEST_INSN(MovzxWord, "movzwq 2(%rdi), %rax")
UDIAG_TEST_INSN(MovsxByte, "movsbw 1(%rdi), %cx")
UDIAG_TEST_INSN(MovsxWord, "movswq 2(%rdi), %r8")
UDIAG_TEST_INSN(MovRspBased, "mov 16(%rsp), %eax")
UDIAG_TEST_INSN(MovRipRelative, "mov 0x11223344(%rip), %edx")
UDIAG_TEST_INSN(MovCrossing32, "mov 4094(%rdi), %eax")
UDIAG_TEST_INSN(MovCrossingStore64, "mov %rcx, 4091(%rdi)")
// --- tier 1 ---
UDIAG_TEST_INSN(Movsxd, "movslq 4(%rdi), %rdx")
UDIAG_TEST_INSN(MoffsLoad, "movabs 0x1122334455667788, %eax")
UDIAG_TEST_INSN(MoffsStore, "movabs %al, 0x1122334455667788")
UDIAG_TEST_INSN(Movnti, "movnti %r12, 24(%rdi)")
UDIAG_TEST_INSN(MovbeLoad, "movbe 4(%rdi), %ecx")
UDIAG_TEST_INSN(MovbeStore, "movbe %r9, 8(%rdi)")
UDIAG_TEST_INSN(PushMem, "pushq 40(%rdi)")
UDIAG_TEST_INSN(PopMem, "popq 40(%rdi)")
UDIAG_TEST_INSN(Push16Mem, "pushw 40(%rdi)")
// --- tier 2 ---
UDIAG_TEST_INSN(AddStore8, "add %dl, 3(%rdi)")
UDIAG_TEST_INSN(AddLoad64, "add 8(%rdi), %r10")
UDIAG_TEST_INSN(AdcImm32, "adcl $0x7fffffff, 8(%rdi)")
UDIAG_TEST_INSN(SbbImm8, "sbbw $-3, 8(%rdi)")
UDIAG_TEST_INSN(OrLoad16, "or 2(%rdi), %si")
UDIAG_TEST_INSN(AndStore32, "and %ebx, 4(%rdi)")
UDIAG_TEST_INSN(SubImm64, "subq $0x80, 8(%rdi)")
UDIAG_TEST_INSN(XorStore64, "xor %rax, 8(%rdi)")
UDIAG_TEST_INSN(CmpMem, "cmpl $0x1000, 4(%rdi)")
UDIAG_TEST_INSN(CmpLoad8, "cmp 1(%rdi), %ch")
UDIAG_TEST_INSN(TestMem, "test %r8d, 4(%rdi)")
UDIAG_TEST_INSN(TestImm8, "testb $0x81, 1(%rdi)")
UDIAG_TEST_INSN(IncMem, "incl 4(%rdi)")
UDIAG_TEST_INSN(DecMem16, "decw 2(%rdi)")
UDIAG_TEST_INSN(NotMem, "notq 8(%rdi)")
UDIAG_TEST_INSN(NegMem, "negb 1(%rdi)")
UDIAG_TEST_INSN(ShlOne, "shll 4(%rdi)")
UDIAG_TEST_INSN(ShrImm, "shrq $13, 8(%rdi)")
UDIAG_TEST_INSN(SarCl, "sarw %cl, 2(%rdi)")
UDIAG_TEST_INSN(RolCl, "rolb %cl, 1(%rdi)")
UDIAG_TEST_INSN(RorImm, "rorl $7, 4(%rdi)")
UDIAG_TEST_INSN(RclCl, "rclq %cl, 8(%rdi)")
UDIAG_TEST_INSN(RcrOne, "rcrw 2(%rdi)")
UDIAG_TEST_INSN(BtImm, "btl $17, 4(%rdi)")
UDIAG_TEST_INSN(BtsReg, "bts %rsi, (%rdi)")
UDIAG_TEST_INSN(BtrReg, "btr %esi, (%rdi)")
UDIAG_TEST_INSN(BtcImm, "btcw $5, 2(%rdi)")
UDIAG_TEST_INSN(Setcc, "setb 9(%rdi)")
UDIAG_TEST_INSN(Setle, "setle 9(%rdi)")
UDIAG_TEST_INSN(Seto, "seto 9(%rdi)")
UDIAG_TEST_INSN(Setnp, "setnp 9(%rdi)")
UDIAG_TEST_INSN(Setns, "setns 9(%rdi)")
UDIAG_TEST_INSN(Seta, "seta 9(%rdi)")
UDIAG_TEST_INSN(Setge, "setge 9(%rdi)")
UDIAG_TEST_INSN(Cmovno64, "cmovno 8(%rdi), %r14")
UDIAG_TEST_INSN(Cmovp32, "cmovp 4(%rdi), %ebp")
UDIAG_TEST_INSN(Cmovs32, "cmovs 4(%rdi), %edi")
UDIAG_TEST_INSN(Cmove32, "cmove 4(%rdi), %r9d")
UDIAG_TEST_INSN(Cmovb64, "cmovb 8(%rdi), %rax")
UDIAG_TEST_INSN(Cmovg16, "cmovg 2(%rdi), %dx")
UDIAG_TEST_INSN(XchgMem8, "xchg %ah, 1(%rdi)")
UDIAG_TEST_INSN(XchgMem64, "xchg %r11, 8(%rdi)")
UDIAG_TEST_INSN(XaddMem, "xadd %ecx, 4(%rdi)")
UDIAG_TEST_INSN(LockXadd, "lock xadd %rcx, 8(%rdi)")
UDIAG_TEST_INSN(LockAdd, "lock addl $1, 4(%rdi)")
UDIAG_TEST_INSN(LockOr8, "lock orb %dl, 1(%rdi)")
UDIAG_TEST_INSN(LockAnd64, "lock and %rbx, 8(%rdi)")
UDIAG_TEST_INSN(LockSbb16, "lock sbb %si, 2(%rdi)")
UDIAG_TEST_INSN(LockNeg, "lock negl 4(%rdi)")
UDIAG_TEST_INSN(LockBts, "lock btsl $9, 4(%rdi)")
UDIAG_TEST_INSN(Cmpxchg32, "cmpxchg %ebx, 4(%rdi)")
UDIAG_TEST_INSN(LockCmpxchg64, "lock cmpxchg %r12, 8(%rdi)")
UDIAG_TEST_INSN(LockCmpxchg8, "lock cmpxchg %bl, 1(%rdi)")
UDIAG_TEST_INSN(LockCmpxchg8b, "lock cmpxchg8b 8(%rdi)")
UDIAG_TEST_INSN(Cmpxchg16b, "cmpxchg16b 16(%rdi)")
UDIAG_TEST_INSN(LockCmpxchg16b, "lock cmpxchg16b 32(%rdi)")
UDIAG_TEST_INSN(AddCrossing, "add %ecx, 4094(%rdi)")
// --- strings ---
UDIAG_TEST_INSN(Movsb, "movsb")
UDIAG_TEST_INSN(Movsq, "movsq")
UDIAG_TEST_INSN(RepMovsd, "rep movsl")
UDIAG_TEST_INSN(RepStosb, "rep stosb")
UDIAG_TEST_INSN(Stosw, "stosw")
UDIAG_TEST_INSN(RepStosq, "rep stosq")
UDIAG_TEST_INSN(Lodsd, "lodsl")
UDIAG_TEST_INSN(RepLodsb, "rep lodsb")
// --- tier 3 ---
UDIAG_TEST_INSN(MovdLoad, "movd 4(%rdi), %xmm3")
UDIAG_TEST_INSN(MovdStore, "movd %xmm7, 4(%rdi)")
UDIAG_TEST_INSN(MovqLoad, "movq 8(%rdi), %xmm12")
UDIAG_TEST_INSN(MovqStore, "movq %xmm9, 8(%rdi)")
UDIAG_TEST_INSN(MovdqaLoad, "movdqa 16(%rdi), %xmm1")
UDIAG_TEST_INSN(MovdquStore, "movdqu %xmm14, 3(%rdi)")
UDIAG_TEST_INSN(MovapsStore, "movaps %xmm2, 32(%rdi)")
UDIAG_TEST_INSN(MovupsLoad, "movups 5(%rdi), %xmm15")
UDIAG_TEST_INSN(MovapdLoad, "movapd 48(%rdi), %xmm4")
UDIAG_TEST_INSN(MovupdStore, "movupd %xmm5, 9(%rdi)")
UDIAG_TEST_INSN(MovssLoad, "movss 4(%rdi), %xmm6")
UDIAG_TEST_INSN(MovsdStore, "movsd %xmm8, 8(%rdi)")
UDIAG_TEST_INSN(MovntdqStore, "movntdq %xmm10, 64(%rdi)")
UDIAG_TEST_INSN(MovntpsStore, "movntps %xmm11, 64(%rdi)")
UDIAG_TEST_INSN(MovntdqaLoad, "movntdqa 64(%rdi), %xmm13")
UDIAG_TEST_INSN(MovdquCrossing, "movdqu 4088(%rdi), %xmm0")
UDIAG_TEST_INSN(VmovdquLoad256, "vmovdqu 1(%rdi), %ymm3")
UDIAG_TEST_INSN(VmovdqaStore256, "vmovdqa %ymm12, 64(%rdi)")
UDIAG_TEST_INSN(VmovdquLoad128, "vmovdqu 1(%rdi), %xmm9")
UDIAG_TEST_INSN(VmovupsStore256, "vmovups %ymm1, 7(%rdi)")
UDIAG_TEST_INSN(VmovapsLoad128, "vmovaps 32(%rdi), %xmm2")
UDIAG_TEST_INSN(VmovqLoad, "vmovq 8(%rdi), %xmm4")
UDIAG_TEST_INSN(VmovdStore, "vmovd %xmm5, 4(%rdi)")
UDIAG_TEST_INSN(VmovssLoad, "vmovss 4(%rdi), %xmm6")
UDIAG_TEST_INSN(VmovsdStore, "vmovsd %xmm7, 8(%rdi)")
UDIAG_TEST_INSN(VmovntdqStore256, "vmovntdq %ymm8, 64(%rdi)")
UDIAG_TEST_INSN(VmovntdqaLoad256, "vmovntdqa 64(%rdi), %ymm10")
UDIAG_TEST_INSN(VpbroadcastbLoad, "vpbroadcastb 3(%rdi), %ymm11")
UDIAG_TEST_INSN(VpbroadcastdLoad, "vpbroadcastd 4(%rdi), %xmm12")
UDIAG_TEST_INSN(VpbroadcastqLoad, "vpbroadcastq 8(%rdi), %ymm13")
UDIAG_TEST_INSN(VmovdquCrossing256, "vmovdqu 4080(%rdi), %ymm14")
// --- AVX-512 (EVEX) ---
UDIAG_TEST_INSN(Vmovdqu64Load512, "vmovdqu64 (%rdi), %zmm3")
UDIAG_TEST_INSN(Vmovdqu32Store512, "vmovdqu32 %zmm21, 64(%rdi)")
UDIAG_TEST_INSN(Vmovdqa64Load512, "vmovdqa64 128(%rdi), %zmm30")
UDIAG_TEST_INSN(Vmovdqu8MaskedLoad, "vmovdqu8 3(%rdi), %zmm4{%k1}")
UDIAG_TEST_INSN(Vmovdqu16MaskedZeroLoad, "vmovdqu16 2(%rdi), %ymm5{%k2}{z}")
UDIAG_TEST_INSN(Vmovdqu32MaskedStore, "vmovdqu32 %zmm6, 4(%rdi){%k3}")
UDIAG_TEST_INSN(Vmovdqu64MaskedStore128, "vmovdqu64 %xmm17, 8(%rdi){%k4}")
UDIAG_TEST_INSN(VmovupsEvexLoad, "vmovups 4(%rdi), %zmm18")
UDIAG_TEST_INSN(VmovdquEvexXmm16, "vmovdqu32 16(%rdi), %xmm16")
UDIAG_TEST_INSN(VpbroadcastdMasked, "vpbroadcastd 4(%rdi), %zmm7{%k5}")
UDIAG_TEST_INSN(Vmovdqu8MaskedCrossing, "vmovdqu8 %zmm8, 4070(%rdi){%k6}")

// --- more addressing: FS segment, R12 base, RIP-relative RMW/vector, other widths ---
UDIAG_TEST_INSN(MovFsRelative, "mov %fs:(%rdi), %eax")
UDIAG_TEST_INSN(AddR12Base, "addl %r9d, 4(%r12)")
UDIAG_TEST_INSN(AddRipRelative, "addl $3, 0x11223344(%rip)")
UDIAG_TEST_INSN(MovdquRipRelativeStore, "movdqu %xmm2, 0x11223344(%rip)")
UDIAG_TEST_INSN(Xchg16, "xchg %r8w, 2(%rdi)")
UDIAG_TEST_INSN(Xadd8, "xadd %dh, 1(%rdi)")
UDIAG_TEST_INSN(Cmpxchg16, "cmpxchg %r10w, 2(%rdi)")
UDIAG_TEST_INSN(MovsbToStack, "movsb")
// --- page-crossing forms (the alias serves one page per call) ---
UDIAG_TEST_INSN(CrossLoad16, "movw (%rdi), %ax")
UDIAG_TEST_INSN(CrossStore64, "movq %rax, (%rdi)")
UDIAG_TEST_INSN(CrossAddImm64, "addq $5, (%rdi)")
UDIAG_TEST_INSN(CrossXadd16, "xaddw %cx, (%rdi)")
UDIAG_TEST_INSN(CrossCmov32, "cmovnel (%rdi), %eax")
UDIAG_TEST_INSN(CrossMovbe64, "movbe (%rdi), %rax")
UDIAG_TEST_INSN(CrossPush, "pushq (%rdi)")
UDIAG_TEST_INSN(CrossBts, "btsl $31, (%rdi)")
UDIAG_TEST_INSN(CrossCmpxchg64, "cmpxchg %rbx, (%rdi)")
UDIAG_TEST_INSN(CrossMovupsStore, "movups %xmm3, (%rdi)")
UDIAG_TEST_INSN(CrossStore512, "vmovdqu64 %zmm9, (%rdi)")
UDIAG_TEST_INSN(CrossBroadcast, "vpbroadcastq (%rdi), %zmm1")
UDIAG_TEST_INSN(CrossRepMovsb, "rep movsb")

struct Case {
  const char* name;
  std::vector<uint8_t> (*code)();
  uint16_t width;
  uint8_t direction;
  // Points registers into the region (view = start of the probed region); may edit memory.
  std::function<void(Machine&, uintptr_t view, std::vector<uint8_t>& memory, uint64_t seed)> setup;
  size_t rip_offset = 0;  // RIP-relative target offset in the region (0: none)
  bool needs_avx512 = false;
  bool locked = false;
};

constexpr size_t kRegion = Harness::kPages * Harness::kPageSize;

uint64_t FsBase() {
  unsigned long base = 0;
  syscall(SYS_arch_prctl, ARCH_GET_FS, &base);
  return base;
}

// Default setup: RDI at the given offset into the region.
auto RdiAt(size_t offset) {
  return [offset](Machine& m, uintptr_t view, std::vector<uint8_t>&, uint64_t) {
    m.gpr[kRdi] = view + offset;
  };
}

std::vector<Case> Cases() {
  auto string_setup = [](bool rep) {
    return [rep](Machine& m, uintptr_t view, std::vector<uint8_t>&, uint64_t seed) {
      const bool backwards = seed % 3 == 0;
      m.gpr[kRsi] = view + (backwards ? 1000 : 100);
      m.gpr[kRdi] = view + (backwards ? 3000 : 2100);
      if (rep) m.gpr[kRcx] = seed % 4 == 1 ? 0 : 1 + seed % 7;
      if (backwards) m.rflags |= 0x400;
    };
  };
  auto cmpxchg = [](size_t offset) {
    return [offset](Machine& m, uintptr_t view, std::vector<uint8_t>& memory, uint64_t seed) {
      m.gpr[kRdi] = view + offset;
      if (seed % 2 == 0) memcpy(&m.gpr[kRax], &memory[offset + 8], 8);  // the operand is 8(%rdi)
    };
  };
  return {
      {"MovLoad8", MovLoad8, 1, kRead, RdiAt(10)},
      {"MovLoadAh", MovLoadAh, 1, kRead, RdiAt(10)},
      {"MovLoad16", MovLoad16, 2, kRead, RdiAt(10)},
      {"MovLoad32", MovLoad32, 4, kRead,
       [](Machine& m, uintptr_t view, std::vector<uint8_t>&, uint64_t seed) {
         m.gpr[kRdi] = view + 64;
         m.gpr[kRsi] = seed % 100;
       }},
      {"MovLoad64", MovLoad64, 8, kRead,
       [](Machine& m, uintptr_t view, std::vector<uint8_t>&, uint64_t seed) {
         m.gpr[kR13] = view + 512;
         m.gpr[kR14] = seed % 300;
       }},
      {"MovStore8Bh", MovStore8Bh, 1, kWrite, RdiAt(10)},
      {"MovStore8Sil", MovStore8Sil, 1, kWrite, RdiAt(10)},
      {"MovStore16", MovStore16, 2, kWrite, RdiAt(10)},
      {"MovStore32", MovStore32, 4, kWrite, RdiAt(10)},
      {"MovStore64", MovStore64, 8, kWrite, RdiAt(10)},
      {"MovStoreImm8", MovStoreImm8, 1, kWrite, RdiAt(10)},
      {"MovStoreImm16", MovStoreImm16, 2, kWrite, RdiAt(10)},
      {"MovStoreImm32", MovStoreImm32, 4, kWrite, RdiAt(10)},
      {"MovStoreImm64", MovStoreImm64, 8, kWrite, RdiAt(10)},
      {"MovzxByte", MovzxByte, 1, kRead, RdiAt(10)},
      {"MovzxWord", MovzxWord, 2, kRead, RdiAt(10)},
      {"MovsxByte", MovsxByte, 1, kRead, RdiAt(10)},
      {"MovsxWord", MovsxWord, 2, kRead, RdiAt(10)},
      {"MovRspBased", MovRspBased, 4, kRead,
       [](Machine& m, uintptr_t view, std::vector<uint8_t>&, uint64_t) { m.gpr[kRsp] = view + 200; }},
      {"MovRipRelative", MovRipRelative, 4, kRead, RdiAt(0), 300},
      {"MovCrossing32", MovCrossing32, 4, kRead, RdiAt(0)},
      {"MovCrossingStore64", MovCrossingStore64, 8, kWrite, RdiAt(0)},
      {"Movsxd", Movsxd, 4, kRead, RdiAt(10)},
      {"MoffsLoad", MoffsLoad, 4, kRead, RdiAt(0), 0},
      {"MoffsStore", MoffsStore, 1, kWrite, RdiAt(0), 0},
      {"Movnti", Movnti, 8, kWrite, RdiAt(10)},
      {"MovbeLoad", MovbeLoad, 4, kRead, RdiAt(10)},
      {"MovbeStore", MovbeStore, 8, kWrite, RdiAt(10)},
      {"PushMem", PushMem, 8, kRead, RdiAt(10)},
      {"PopMem", PopMem, 8, kWrite, RdiAt(10)},
      {"Push16Mem", Push16Mem, 2, kRead, RdiAt(10)},
      {"AddStore8", AddStore8, 1, kReadWrite, RdiAt(10)},
      {"AddLoad64", AddLoad64, 8, kRead, RdiAt(10)},
      {"AdcImm32", AdcImm32, 4, kReadWrite, RdiAt(10)},
      {"SbbImm8", SbbImm8, 2, kReadWrite, RdiAt(10)},
      {"OrLoad16", OrLoad16, 2, kRead, RdiAt(10)},
      {"AndStore32", AndStore32, 4, kReadWrite, RdiAt(10)},
      {"SubImm64", SubImm64, 8, kReadWrite, RdiAt(10)},
      {"XorStore64", XorStore64, 8, kReadWrite, RdiAt(10)},
      {"CmpMem", CmpMem, 4, kRead, RdiAt(10)},
      {"CmpLoad8", CmpLoad8, 1, kRead, RdiAt(10)},
      {"TestMem", TestMem, 4, kRead, RdiAt(10)},
      {"TestImm8", TestImm8, 1, kRead, RdiAt(10)},
      {"IncMem", IncMem, 4, kReadWrite, RdiAt(10)},
      {"DecMem16", DecMem16, 2, kReadWrite, RdiAt(10)},
      {"NotMem", NotMem, 8, kReadWrite, RdiAt(10)},
      {"NegMem", NegMem, 1, kReadWrite, RdiAt(10)},
      {"ShlOne", ShlOne, 4, kReadWrite, RdiAt(10)},
      {"ShrImm", ShrImm, 8, kReadWrite, RdiAt(10)},
      {"SarCl", SarCl, 2, kReadWrite, RdiAt(10)},
      {"RolCl", RolCl, 1, kReadWrite, RdiAt(10)},
      {"RorImm", RorImm, 4, kReadWrite, RdiAt(10)},
      {"RclCl", RclCl, 8, kReadWrite, RdiAt(10)},
      {"RcrOne", RcrOne, 2, kReadWrite, RdiAt(10)},
      {"BtImm", BtImm, 4, kRead, RdiAt(10)},
      {"BtsReg", BtsReg, 8, kReadWrite,
       [](Machine& m, uintptr_t view, std::vector<uint8_t>&, uint64_t seed) {
         m.gpr[kRdi] = view + 2048;
         m.gpr[kRsi] = static_cast<uint64_t>(static_cast<int64_t>(seed * 37 % 2000) - 1000);
       }},
      {"BtrReg", BtrReg, 4, kReadWrite,
       [](Machine& m, uintptr_t view, std::vector<uint8_t>&, uint64_t seed) {
         m.gpr[kRdi] = view + 2048;
         m.gpr[kRsi] = (m.gpr[kRsi] & ~0xFFFFFFFFull) |
                       static_cast<uint32_t>(static_cast<int32_t>(seed * 53 % 3000) - 1500);
       }},
      {"BtcImm", BtcImm, 2, kReadWrite, RdiAt(10)},
      {"Setcc", Setcc, 1, kWrite, RdiAt(10)},
      {"Setle", Setle, 1, kWrite, RdiAt(10)},
      {"Seto", Seto, 1, kWrite, RdiAt(10)},
      {"Setnp", Setnp, 1, kWrite, RdiAt(10)},
      {"Setns", Setns, 1, kWrite, RdiAt(10)},
      {"Seta", Seta, 1, kWrite, RdiAt(10)},
      {"Setge", Setge, 1, kWrite, RdiAt(10)},
      {"Cmovno64", Cmovno64, 8, kRead, RdiAt(10)},
      {"Cmovp32", Cmovp32, 4, kRead, RdiAt(10)},
      {"Cmovs32", Cmovs32, 4, kRead, RdiAt(10)},
      {"Cmove32", Cmove32, 4, kRead, RdiAt(10)},
      {"Cmovb64", Cmovb64, 8, kRead, RdiAt(10)},
      {"Cmovg16", Cmovg16, 2, kRead, RdiAt(10)},
      {"XchgMem8", XchgMem8, 1, kReadWrite, RdiAt(10), 0, false, true},
      {"XchgMem64", XchgMem64, 8, kReadWrite, RdiAt(10), 0, false, true},
      {"XaddMem", XaddMem, 4, kReadWrite, RdiAt(10)},
      {"LockXadd", LockXadd, 8, kReadWrite, RdiAt(10), 0, false, true},
      {"LockAdd", LockAdd, 4, kReadWrite, RdiAt(10), 0, false, true},
      {"LockOr8", LockOr8, 1, kReadWrite, RdiAt(10), 0, false, true},
      {"LockAnd64", LockAnd64, 8, kReadWrite, RdiAt(10), 0, false, true},
      {"LockSbb16", LockSbb16, 2, kReadWrite, RdiAt(10), 0, false, true},
      {"LockNeg", LockNeg, 4, kReadWrite, RdiAt(10), 0, false, true},
      {"LockBts", LockBts, 4, kReadWrite, RdiAt(10), 0, false, true},
      {"Cmpxchg32", Cmpxchg32, 4, kReadWrite,
       [](Machine& m, uintptr_t view, std::vector<uint8_t>& memory, uint64_t seed) {
         m.gpr[kRdi] = view + 16;
         if (seed % 2 == 0) memcpy(&m.gpr[kRax], &memory[20], 4);
       }},
      {"LockCmpxchg64", LockCmpxchg64, 8, kReadWrite, cmpxchg(16), 0, false, true},
      {"LockCmpxchg8", LockCmpxchg8, 1, kReadWrite,
       [](Machine& m, uintptr_t view, std::vector<uint8_t>& memory, uint64_t seed) {
         m.gpr[kRdi] = view + 16;
         if (seed % 2 == 0) memcpy(&m.gpr[kRax], &memory[17], 1);
       }, 0, false, true},
      {"LockCmpxchg8b", LockCmpxchg8b, 8, kReadWrite,
       [](Machine& m, uintptr_t view, std::vector<uint8_t>& memory, uint64_t seed) {
         m.gpr[kRdi] = view + 16;
         if (seed % 2 == 0) {
           memcpy(&m.gpr[kRax], &memory[24], 4);
           memcpy(&m.gpr[kRdx], &memory[28], 4);
         }
       }, 0, false, true},
      {"Cmpxchg16b", Cmpxchg16b, 16, kReadWrite,
       [](Machine& m, uintptr_t view, std::vector<uint8_t>& memory, uint64_t seed) {
         m.gpr[kRdi] = view + 64;
         if (seed % 2 == 0) {
           memcpy(&m.gpr[kRax], &memory[80], 8);
           memcpy(&m.gpr[kRdx], &memory[88], 8);
         }
       }},
      {"LockCmpxchg16b", LockCmpxchg16b, 16, kReadWrite,
       [](Machine& m, uintptr_t view, std::vector<uint8_t>& memory, uint64_t seed) {
         m.gpr[kRdi] = view + 64;
         if (seed % 2 == 0) {
           memcpy(&m.gpr[kRax], &memory[96], 8);
           memcpy(&m.gpr[kRdx], &memory[104], 8);
         }
       }, 0, false, true},
      {"AddCrossing", AddCrossing, 4, kReadWrite, RdiAt(0)},
      {"Movsb", Movsb, 1, kRead, string_setup(false)},
      {"Movsq", Movsq, 8, kRead, string_setup(false)},
      {"RepMovsd", RepMovsd, 4, kRead, string_setup(true)},
      {"RepStosb", RepStosb, 1, kWrite, string_setup(true)},
      {"Stosw", Stosw, 2, kWrite, string_setup(false)},
      {"RepStosq", RepStosq, 8, kWrite, string_setup(true)},
      {"Lodsd", Lodsd, 4, kRead, string_setup(false)},
      {"RepLodsb", RepLodsb, 1, kRead, string_setup(true)},
      {"MovdLoad", MovdLoad, 4, kRead, RdiAt(10)},
      {"MovdStore", MovdStore, 4, kWrite, RdiAt(10)},
      {"MovqLoad", MovqLoad, 8, kRead, RdiAt(10)},
      {"MovqStore", MovqStore, 8, kWrite, RdiAt(10)},
      {"MovdqaLoad", MovdqaLoad, 16, kRead, RdiAt(0)},
      {"MovdquStore", MovdquStore, 16, kWrite, RdiAt(10)},
      {"MovapsStore", MovapsStore, 16, kWrite, RdiAt(0)},
      {"MovupsLoad", MovupsLoad, 16, kRead, RdiAt(10)},
      {"MovapdLoad", MovapdLoad, 16, kRead, RdiAt(0)},
      {"MovupdStore", MovupdStore, 16, kWrite, RdiAt(10)},
      {"MovssLoad", MovssLoad, 4, kRead, RdiAt(10)},
      {"MovsdStore", MovsdStore, 8, kWrite, RdiAt(10)},
      {"MovntdqStore", MovntdqStore, 16, kWrite, RdiAt(0)},
      {"MovntpsStore", MovntpsStore, 16, kWrite, RdiAt(0)},
      {"MovntdqaLoad", MovntdqaLoad, 16, kRead, RdiAt(0)},
      {"MovdquCrossing", MovdquCrossing, 16, kRead, RdiAt(0)},
      {"VmovdquLoad256", VmovdquLoad256, 32, kRead, RdiAt(10)},
      {"VmovdqaStore256", VmovdqaStore256, 32, kWrite, RdiAt(0)},
      {"VmovdquLoad128", VmovdquLoad128, 16, kRead, RdiAt(10)},
      {"VmovupsStore256", VmovupsStore256, 32, kWrite, RdiAt(10)},
      {"VmovapsLoad128", VmovapsLoad128, 16, kRead, RdiAt(0)},
      {"VmovqLoad", VmovqLoad, 8, kRead, RdiAt(10)},
      {"VmovdStore", VmovdStore, 4, kWrite, RdiAt(10)},
      {"VmovssLoad", VmovssLoad, 4, kRead, RdiAt(10)},
      {"VmovsdStore", VmovsdStore, 8, kWrite, RdiAt(10)},
      {"VmovntdqStore256", VmovntdqStore256, 32, kWrite, RdiAt(0)},
      {"VmovntdqaLoad256", VmovntdqaLoad256, 32, kRead, RdiAt(0)},
      {"VpbroadcastbLoad", VpbroadcastbLoad, 1, kRead, RdiAt(10)},
      {"VpbroadcastdLoad", VpbroadcastdLoad, 4, kRead, RdiAt(10)},
      {"VpbroadcastqLoad", VpbroadcastqLoad, 8, kRead, RdiAt(10)},
      {"VmovdquCrossing256", VmovdquCrossing256, 32, kRead, RdiAt(0)},
      {"Vmovdqu64Load512", Vmovdqu64Load512, 64, kRead, RdiAt(10), 0, true},
      {"Vmovdqu32Store512", Vmovdqu32Store512, 64, kWrite, RdiAt(10), 0, true},
      {"Vmovdqa64Load512", Vmovdqa64Load512, 64, kRead, RdiAt(0), 0, true},
      {"Vmovdqu8MaskedLoad", Vmovdqu8MaskedLoad, 64, kRead, RdiAt(10), 0, true},
      {"Vmovdqu16MaskedZeroLoad", Vmovdqu16MaskedZeroLoad, 32, kRead, RdiAt(10), 0, true},
      {"Vmovdqu32MaskedStore", Vmovdqu32MaskedStore, 64, kWrite, RdiAt(10), 0, true},
      {"Vmovdqu64MaskedStore128", Vmovdqu64MaskedStore128, 16, kWrite,
       [](Machine& m, uintptr_t view, std::vector<uint8_t>&, uint64_t) {
         m.gpr[kRdi] = view + 10;
         m.k[4] |= 1;  // with both elements masked off nothing is accessed and nothing faults
       }, 0, true},
      {"VmovupsEvexLoad", VmovupsEvexLoad, 64, kRead, RdiAt(10), 0, true},
      {"VmovdquEvexXmm16", VmovdquEvexXmm16, 16, kRead, RdiAt(10), 0, true},
      {"VpbroadcastdMasked", VpbroadcastdMasked, 4, kRead, RdiAt(10), 0, true},
      {"Vmovdqu8MaskedCrossing", Vmovdqu8MaskedCrossing, 64, kWrite, RdiAt(0), 0, true},
      {"MovFsRelative", MovFsRelative, 4, kRead,
       [](Machine& m, uintptr_t view, std::vector<uint8_t>&, uint64_t) {
         m.gpr[kRdi] = view + 40 - FsBase();
       }},
      {"AddR12Base", AddR12Base, 4, kReadWrite,
       [](Machine& m, uintptr_t view, std::vector<uint8_t>&, uint64_t) { m.gpr[kR12] = view + 300; }},
      {"AddRipRelative", AddRipRelative, 4, kReadWrite, RdiAt(0), 1000},
      {"MovdquRipRelativeStore", MovdquRipRelativeStore, 16, kWrite, RdiAt(0), 4090},
      {"Xchg16", Xchg16, 2, kReadWrite, RdiAt(10), 0, false, true},
      {"Xadd8", Xadd8, 1, kReadWrite, RdiAt(10)},
      {"Cmpxchg16", Cmpxchg16, 2, kReadWrite,
       [](Machine& m, uintptr_t view, std::vector<uint8_t>& memory, uint64_t seed) {
         m.gpr[kRdi] = view + 10;
         if (seed % 2 == 0) memcpy(&m.gpr[kRax], &memory[12], 2);
       }},
      {"MovsbToStack", MovsbToStack, 1, kRead,
       [](Machine& m, uintptr_t view, std::vector<uint8_t>&, uint64_t) {
         m.gpr[kRsi] = view + 70;
         m.gpr[kRdi] = m.gpr[kRsp] - 256;  // unprobed destination: the alias returns it as is
       }},
      {"CrossLoad16", CrossLoad16, 2, kRead, RdiAt(4095)},
      {"CrossStore64", CrossStore64, 8, kWrite, RdiAt(4092)},
      {"CrossAddImm64", CrossAddImm64, 8, kReadWrite, RdiAt(4090)},
      {"CrossXadd16", CrossXadd16, 2, kReadWrite, RdiAt(4095)},
      {"CrossCmov32", CrossCmov32, 4, kRead, RdiAt(4094)},
      {"CrossMovbe64", CrossMovbe64, 8, kRead, RdiAt(4093)},
      {"CrossPush", CrossPush, 8, kRead, RdiAt(4092)},
      {"CrossBts", CrossBts, 4, kReadWrite, RdiAt(4094)},
      {"CrossCmpxchg64", CrossCmpxchg64, 8, kReadWrite,
       [](Machine& m, uintptr_t view, std::vector<uint8_t>& memory, uint64_t seed) {
         m.gpr[kRdi] = view + 4092;
         if (seed % 2 == 0) memcpy(&m.gpr[kRax], &memory[4092], 8);
       }},
      {"CrossMovupsStore", CrossMovupsStore, 16, kWrite, RdiAt(4090)},
      {"CrossStore512", CrossStore512, 64, kWrite, RdiAt(4060), 0, true},
      {"CrossBroadcast", CrossBroadcast, 8, kRead, RdiAt(4092), 0, true},
      {"CrossRepMovsb", CrossRepMovsb, 1, kRead,
       [](Machine& m, uintptr_t view, std::vector<uint8_t>&, uint64_t seed) {
         m.gpr[kRsi] = view + 4094;
         m.gpr[kRdi] = view + 6000;
         m.gpr[kRcx] = 3 + seed % 4;
       }},
  };
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// The values Execute reports (what a tracer logs) are the bytes memory held before the access
// and holds after it, at the decoded address (for MOVS the write is at second_address).
void ExpectRecordedValues(const Case& c, const FaultRecord& fault, const Harness& harness,
                          const std::vector<uint8_t>& before, const std::vector<uint8_t>& after) {
  const bool masked = strstr(c.name, "Masked") != nullptr;  // masked-off bytes are not recorded
  const size_t width = fault.decoded.width;
  EXPECT_EQ(fault.result.did_read, (c.direction & kRead) != 0);
  EXPECT_EQ(fault.result.did_write, (c.direction & kWrite) != 0 || c.code == Movsb ||
                                        c.code == Movsq || c.code == RepMovsd || c.code == MovsbToStack ||
                                        c.code == CrossRepMovsb);
  if (masked) return;
  if (fault.result.did_read) {
    const size_t offset = harness.MemoryIndex(fault.decoded.address);
    ASSERT_LE(offset + width, before.size());
    EXPECT_EQ(0, memcmp(fault.result.value_read, &before[offset], width)) << "value_read";
  }
  if (fault.result.did_write) {
    const uintptr_t at = fault.decoded.second_address ? fault.decoded.second_address
                                                      : fault.decoded.address;
    const size_t offset = harness.MemoryIndex(at);
    ASSERT_LE(offset + width, after.size());
    EXPECT_EQ(0, memcmp(fault.result.value_written, &after[offset], width)) << "value_written";
  }
}

class EmulatorEquivalenceTest : public ::testing::TestWithParam<Case> {};

// moffs forms carry the absolute address in the instruction: patch it to the region.
std::vector<uint8_t> CodeFor(const Case& c, uintptr_t view) {
  std::vector<uint8_t> code = c.code();
  if (c.code == MoffsLoad || c.code == MoffsStore) {
    const uint64_t target = view + 77;
    memcpy(&code[code.size() - 8], &target, 8);
  }
  return code;
}

TEST_P(EmulatorEquivalenceTest, SameStateAsNativeExecution) {
  const Case& c = GetParam();
  if (!CpuHasAvx512()) GTEST_SKIP() << "the test machine loads ZMM/opmask state: needs AVX-512";
  Harness harness;
  const auto view = reinterpret_cast<uintptr_t>(harness.view());
  const std::vector<uint8_t> code = CodeFor(c, view);
  constexpr int kSeeds = 12;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE(::testing::Message() << c.name << " seed " << seed);
    Machine machine = RandomMachine(seed * 7919 + code.size());
    machine.gpr[kRsp] = harness.stack_top();
    std::vector<uint8_t> memory = RandomBytes(seed * 104729, kRegion + Harness::kStackSize);
    c.setup(machine, view, memory, seed);
    const uintptr_t rip_target = c.rip_offset ? view + c.rip_offset : 0;
    const Harness::Outcome native = harness.Run(code, machine, memory, false, rip_target);
    const Harness::Outcome emulated = harness.Run(code, machine, memory, true, rip_target);

    EXPECT_EQ(native.fault.faults, 0);
    const bool no_access = c.name[0] == 'R' && c.name[1] == 'e' && c.name[2] == 'p' &&
                           machine.gpr[kRcx] == 0;
    if (!no_access) {
      ASSERT_GE(emulated.fault.faults, 1) << "the access did not fault on the probed view";
      ASSERT_EQ(emulated.fault.failures, 0) << "decode status " << int(emulated.fault.status);
      EXPECT_EQ(emulated.fault.decoded.width, c.width);
      EXPECT_EQ(emulated.fault.decoded.direction, c.direction);
      EXPECT_EQ(emulated.fault.decoded.locked, c.locked);
    }
    ExpectSameState(native, emulated);
    if (!no_access) ExpectRecordedValues(c, emulated.fault, harness, memory, emulated.memory);
  }
}

INSTANTIATE_TEST_SUITE_P(AllForms, EmulatorEquivalenceTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace udiag::mmio::testing
