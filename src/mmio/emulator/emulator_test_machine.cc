// Runs one instruction sequence with a complete machine state loaded and stores the state it
// leaves (test harness for the emulator: the same code runs natively and under emulation).
//
// struct Machine (emulator_test_harness.h): gpr[16] (RAX RCX RDX RBX RSP RBP RSI RDI R8..R15) at 0,
// rflags at 128, zmm[32][64] at 192, k[8] at 2240.
//
// extern "C" void udiag_emu_test_run(Machine* machine, const void* code): jumps to `code` with the state
// loaded; `code` must end by jumping to udiag_emu_test_return.
// Top-level asm in a C++ file: the project enables no ASM language.
asm(R"(
  .pushsection .text
  .globl udiag_emu_test_run
  .type udiag_emu_test_run, @function
udiag_emu_test_run:
  push %rbp
  push %rbx
  push %r12
  push %r13
  push %r14
  push %r15
  mov %rsp, saved_rsp(%rip)
  mov %rdi, saved_machine(%rip)
  mov %rsi, target(%rip)
  vmovdqu64 192(%rdi), %zmm0
  vmovdqu64 256(%rdi), %zmm1
  vmovdqu64 320(%rdi), %zmm2
  vmovdqu64 384(%rdi), %zmm3
  vmovdqu64 448(%rdi), %zmm4
  vmovdqu64 512(%rdi), %zmm5
  vmovdqu64 576(%rdi), %zmm6
  vmovdqu64 640(%rdi), %zmm7
  vmovdqu64 704(%rdi), %zmm8
  vmovdqu64 768(%rdi), %zmm9
  vmovdqu64 832(%rdi), %zmm10
  vmovdqu64 896(%rdi), %zmm11
  vmovdqu64 960(%rdi), %zmm12
  vmovdqu64 1024(%rdi), %zmm13
  vmovdqu64 1088(%rdi), %zmm14
  vmovdqu64 1152(%rdi), %zmm15
  vmovdqu64 1216(%rdi), %zmm16
  vmovdqu64 1280(%rdi), %zmm17
  vmovdqu64 1344(%rdi), %zmm18
  vmovdqu64 1408(%rdi), %zmm19
  vmovdqu64 1472(%rdi), %zmm20
  vmovdqu64 1536(%rdi), %zmm21
  vmovdqu64 1600(%rdi), %zmm22
  vmovdqu64 1664(%rdi), %zmm23
  vmovdqu64 1728(%rdi), %zmm24
  vmovdqu64 1792(%rdi), %zmm25
  vmovdqu64 1856(%rdi), %zmm26
  vmovdqu64 1920(%rdi), %zmm27
  vmovdqu64 1984(%rdi), %zmm28
  vmovdqu64 2048(%rdi), %zmm29
  vmovdqu64 2112(%rdi), %zmm30
  vmovdqu64 2176(%rdi), %zmm31
  kmovq 2240(%rdi), %k0
  kmovq 2248(%rdi), %k1
  kmovq 2256(%rdi), %k2
  kmovq 2264(%rdi), %k3
  kmovq 2272(%rdi), %k4
  kmovq 2280(%rdi), %k5
  kmovq 2288(%rdi), %k6
  kmovq 2296(%rdi), %k7
  pushq 128(%rdi)
  popfq
  mov 0(%rdi), %rax
  mov 8(%rdi), %rcx
  mov 16(%rdi), %rdx
  mov 24(%rdi), %rbx
  mov 32(%rdi), %rsp
  mov 40(%rdi), %rbp
  mov 48(%rdi), %rsi
  mov 64(%rdi), %r8
  mov 72(%rdi), %r9
  mov 80(%rdi), %r10
  mov 88(%rdi), %r11
  mov 96(%rdi), %r12
  mov 104(%rdi), %r13
  mov 112(%rdi), %r14
  mov 120(%rdi), %r15
  mov 56(%rdi), %rdi
  jmp *target(%rip)
  .size udiag_emu_test_run, .-udiag_emu_test_run

  .globl udiag_emu_test_return
  .type udiag_emu_test_return, @function
udiag_emu_test_return:
  mov %rdi, scratch(%rip)
  mov saved_machine(%rip), %rdi
  mov %rax, 0(%rdi)
  mov %rcx, 8(%rdi)
  mov %rdx, 16(%rdi)
  mov %rbx, 24(%rdi)
  mov %rsp, 32(%rdi)
  mov %rbp, 40(%rdi)
  mov %rsi, 48(%rdi)
  mov %r8, 64(%rdi)
  mov %r9, 72(%rdi)
  mov %r10, 80(%rdi)
  mov %r11, 88(%rdi)
  mov %r12, 96(%rdi)
  mov %r13, 104(%rdi)
  mov %r14, 112(%rdi)
  mov %r15, 120(%rdi)
  mov saved_rsp(%rip), %rsp
  pushfq
  popq 128(%rdi)
  cld
  mov scratch(%rip), %rax
  mov %rax, 56(%rdi)
  vmovdqu64 %zmm0, 192(%rdi)
  vmovdqu64 %zmm1, 256(%rdi)
  vmovdqu64 %zmm2, 320(%rdi)
  vmovdqu64 %zmm3, 384(%rdi)
  vmovdqu64 %zmm4, 448(%rdi)
  vmovdqu64 %zmm5, 512(%rdi)
  vmovdqu64 %zmm6, 576(%rdi)
  vmovdqu64 %zmm7, 640(%rdi)
  vmovdqu64 %zmm8, 704(%rdi)
  vmovdqu64 %zmm9, 768(%rdi)
  vmovdqu64 %zmm10, 832(%rdi)
  vmovdqu64 %zmm11, 896(%rdi)
  vmovdqu64 %zmm12, 960(%rdi)
  vmovdqu64 %zmm13, 1024(%rdi)
  vmovdqu64 %zmm14, 1088(%rdi)
  vmovdqu64 %zmm15, 1152(%rdi)
  vmovdqu64 %zmm16, 1216(%rdi)
  vmovdqu64 %zmm17, 1280(%rdi)
  vmovdqu64 %zmm18, 1344(%rdi)
  vmovdqu64 %zmm19, 1408(%rdi)
  vmovdqu64 %zmm20, 1472(%rdi)
  vmovdqu64 %zmm21, 1536(%rdi)
  vmovdqu64 %zmm22, 1600(%rdi)
  vmovdqu64 %zmm23, 1664(%rdi)
  vmovdqu64 %zmm24, 1728(%rdi)
  vmovdqu64 %zmm25, 1792(%rdi)
  vmovdqu64 %zmm26, 1856(%rdi)
  vmovdqu64 %zmm27, 1920(%rdi)
  vmovdqu64 %zmm28, 1984(%rdi)
  vmovdqu64 %zmm29, 2048(%rdi)
  vmovdqu64 %zmm30, 2112(%rdi)
  vmovdqu64 %zmm31, 2176(%rdi)
  kmovq %k0, 2240(%rdi)
  kmovq %k1, 2248(%rdi)
  kmovq %k2, 2256(%rdi)
  kmovq %k3, 2264(%rdi)
  kmovq %k4, 2272(%rdi)
  kmovq %k5, 2280(%rdi)
  kmovq %k6, 2288(%rdi)
  kmovq %k7, 2296(%rdi)
  vzeroupper
  pop %r15
  pop %r14
  pop %r13
  pop %r12
  pop %rbx
  pop %rbp
  ret
  .size udiag_emu_test_return, .-udiag_emu_test_return

  .popsection
  .pushsection .bss
  .balign 8
saved_rsp: .quad 0
saved_machine: .quad 0
target: .quad 0
scratch: .quad 0
  .popsection
)");
