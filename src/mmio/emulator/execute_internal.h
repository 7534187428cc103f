// Shared by the Execute recipes: one emulation in progress.
#pragma once

#include <cstring>

#include "mmio/emulator/emulator.h"
#include "mmio/emulator/guest_memory.h"
#include "mmio/emulator/instruction_state.h"
#include "mmio/emulator/machine_context.h"

namespace udiag::mmio {

struct Emulation {
  const DecodedInstruction& decoded;
  const InstructionState& state;
  ucontext_t* uc;
  AliasFn alias;
  void* alias_ctx;
  ExecuteResult* result;

  const ZydisDecodedInstruction& insn() const { return state.insn; }
  const ZydisDecodedOperand& operand(int i) const { return state.operands[i]; }
  const ZydisDecodedOperand& memory_operand() const { return state.operands[state.memory_operand]; }
  bool memory_is(int i) const { return state.memory_operand == i; }
  greg_t& greg(int index) const { return uc->uc_mcontext.gregs[index]; }
  uint64_t flags() const { return static_cast<uint64_t>(greg(REG_EFL)); }

  bool Resolve(GuestRange* range, uintptr_t address, size_t len) const {
    return range->Resolve(alias, alias_ctx, address, len);
  }
  // Reads/writes the whole range and records the bytes in the result.
  void ReadRecorded(const GuestRange& range, uint8_t* out) const {
    range.Read(out);
    memcpy(result->value_read, out, decoded.width);
    result->did_read = true;
  }
  void WriteRecorded(const GuestRange& range, const uint8_t* in) const {
    range.Write(in);
    memcpy(result->value_written, in, decoded.width);
    result->did_write = true;
  }
  void NoteRead(uint64_t value) const {
    memcpy(result->value_read, &value, decoded.width);
    result->did_read = true;
  }
  void NoteWrite(uint64_t value) const {
    memcpy(result->value_written, &value, decoded.width);
    result->did_write = true;
  }
  void AdvanceIp() const { greg(REG_RIP) = static_cast<greg_t>(decoded.ip + decoded.length); }
};

// Each returns false (nothing changed) when the access cannot be performed.
bool ExecuteInteger(const Emulation& e);
bool ExecuteString(const Emulation& e);
bool ExecuteVector(const Emulation& e);

}  // namespace udiag::mmio
