// Test harness: runs one instruction natively on plain memory and under emulation on a probed
// (PROT_NONE) view of the same memory, and captures everything it can change.
#pragma once

#include <signal.h>
#include <sys/ucontext.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mmio/emulator/emulator.h"

namespace udiag::mmio::testing {

// Layout shared with emulator_test_machine.S.
struct Machine {
  uint64_t gpr[16];  // RAX RCX RDX RBX RSP RBP RSI RDI R8..R15
  uint64_t rflags;
  uint64_t padding[7];
  alignas(64) uint8_t zmm[32][64];
  uint64_t k[8];
};
static_assert(offsetof(Machine, rflags) == 128 && offsetof(Machine, zmm) == 192 &&
              offsetof(Machine, k) == 2240);

enum Gpr { kRax, kRcx, kRdx, kRbx, kRsp, kRbp, kRsi, kRdi, kR8, kR9, kR10, kR11, kR12, kR13, kR14, kR15 };

// Instruction bytes assembled into the test binary: UDIAG_TEST_INSN(name, "att text") defines
// name() returning the bytes of "att text".
#define UDIAG_TEST_INSN(name, text)                                                   \
  extern "C" const uint8_t udiag_insn_##name##_begin[], udiag_insn_##name##_end[];    \
  asm(".pushsection .rodata.udiag_insns,\"a\"\n udiag_insn_" #name "_begin:\n " text \
      "\n udiag_insn_" #name "_end:\n .popsection");                                   \
  inline std::vector<uint8_t> name() {                                                \
    return {udiag_insn_##name##_begin, udiag_insn_##name##_end};                       \
  }

// What the SIGSEGV handler saw for the instruction (first fault of a run).
struct FaultRecord {
  int faults = 0;
  int failures = 0;           // faults the emulator could not handle
  DecodeStatus status = DecodeStatus::kInvalid;
  DecodedInstruction decoded;
  ExecuteResult result;
};

// A probed region: kPages pages of a memfd mapped as `view` (PROT_NONE while emulating) and as
// an always-RW `alias`; the emulator's alias function serves only page-sized pieces, so accesses
// that cross the page boundary take the split path. Also a scratch stack and a code page near
// the view (for RIP-relative operands).
class Harness {
 public:
  static constexpr size_t kPages = 2;
  static constexpr size_t kPageSize = 4096;
  static constexpr size_t kStackSize = 64 * 1024;

  Harness();
  ~Harness();

  uint8_t* view() const { return view_; }
  uint8_t* alias() const { return alias_; }
  uintptr_t stack_top() const { return reinterpret_cast<uintptr_t>(stack_) + kStackSize / 2; }
  // Index in Outcome::memory of the byte at `addr` (region or scratch stack), or SIZE_MAX.
  size_t MemoryIndex(uintptr_t addr) const;

  // Between Arm and Disarm the view is PROT_NONE and every access to it is emulated, from any
  // thread (faults are counted in `record`).
  void Arm(FaultRecord* record);
  void Disarm();

  struct Outcome {
    Machine machine;
    std::vector<uint8_t> memory;  // the region, then the scratch stack
    FaultRecord fault;
  };
  // Runs `code` once with memory = `memory` and registers = `in`; emulated=true runs it on the
  // PROT_NONE view through the emulator. `rip_target` (if not 0) is where a RIP-relative
  // operand of `code` is patched to point.
  Outcome Run(const std::vector<uint8_t>& code, const Machine& in,
              const std::vector<uint8_t>& memory, bool emulated, uintptr_t rip_target = 0);

 private:
  int fd_ = -1;
  uint8_t* view_ = nullptr;
  uint8_t* alias_ = nullptr;
  uint8_t* code_ = nullptr;
  uint8_t* stack_ = nullptr;
  struct sigaction old_action_ {};
  stack_t old_stack_ {};
  std::vector<uint8_t> signal_stack_;
};

// Random machine state (status flags random, DF clear) from a seeded generator.
Machine RandomMachine(uint64_t seed);
std::vector<uint8_t> RandomBytes(uint64_t seed, size_t len);

bool CpuHasAvx512();

}  // namespace udiag::mmio::testing
