// Fuzzes the x86-64 access decoder and emulator of the memory-access probes:
// an instruction that faulted, decoded against a signal context and, when
// supported, emulated on a scratch view of the memory.
//
// Input: up to 15 instruction bytes, then the general registers' values
// (8 bytes each, in gregs order; missing ones are zero).
#include <ucontext.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mmio/emulator/emulator.h"

using namespace udiag::mmio;

namespace {

constexpr size_t kMaxInstructionBytes = 15;

// Every address the instruction touches maps to this one buffer.
alignas(64) uint8_t scratch[4096];

uint8_t* ScratchAlias(void*, uintptr_t, size_t len) { return len <= sizeof(scratch) ? scratch : nullptr; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The code is read at RIP: the bytes, then 0x90 (nop) padding that a
  // longer decode may read.
  alignas(16) uint8_t code[32];
  std::memset(code, 0x90, sizeof(code));
  const size_t code_bytes = std::min(size, kMaxInstructionBytes);
  std::memcpy(code, data, code_bytes);

  ucontext_t uc{};
  // FXSAVE image without XSAVE header (magic absent): XMM registers only.
  alignas(64) static uint8_t fpstate[4096];
  std::memset(fpstate, 0, sizeof(fpstate));
  uc.uc_mcontext.fpregs = reinterpret_cast<fpregset_t>(fpstate);
  const size_t greg_bytes = std::min(size - code_bytes, sizeof(uc.uc_mcontext.gregs));
  std::memcpy(uc.uc_mcontext.gregs, data + code_bytes, greg_bytes);
  uc.uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(reinterpret_cast<uintptr_t>(code));

  DecodedInstruction insn;
  if (Decode(uc, &insn) != DecodeStatus::kOk) return 0;
  ExecuteResult result;
  Execute(insn, &uc, ScratchAlias, nullptr, &result);
  return 0;
}
