#include "mmio/rebase_check.h"

#include <Zydis/Zydis.h>

namespace udiag::mmio {
namespace {

ZydisRegister Enclosing(ZydisRegister reg) {
  return ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg);
}

bool UsesRegister(const ZydisDecodedOperand& op, ZydisRegister target) {
  switch (op.type) {
    case ZYDIS_OPERAND_TYPE_REGISTER:
      return Enclosing(op.reg.value) == target;
    case ZYDIS_OPERAND_TYPE_MEMORY:
      return Enclosing(op.mem.base) == target || Enclosing(op.mem.index) == target;
    default:
      return false;
  }
}

}  // namespace

bool RebaseIsSafe(const DecodedInstruction& insn) {
  ZydisDecoder decoder;
  ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
  ZydisDecodedInstruction decoded;
  ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT];
  if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, insn.bytes, insn.length, &decoded, operands))) return false;
  int memory = -1;
  for (int i = 0; i < decoded.operand_count; ++i) {
    if (operands[i].type == ZYDIS_OPERAND_TYPE_MEMORY && operands[i].mem.type == ZYDIS_MEMOP_TYPE_MEM) {
      if (memory >= 0) return false;  // two memory operands
      memory = i;
    }
  }
  if (memory < 0) return false;
  // The same choice as RebaseRegister() in fault_handler.cc: base, else index.
  const ZydisDecodedOperand& mem = operands[memory];
  const ZydisRegister moved = Enclosing(mem.mem.base != ZYDIS_REGISTER_NONE ? mem.mem.base : mem.mem.index);
  if (moved == ZYDIS_REGISTER_NONE || moved == ZYDIS_REGISTER_RIP) return false;
  for (int i = 0; i < decoded.operand_count; ++i) {
    const ZydisDecodedOperand& op = operands[i];
    if (i == memory || !UsesRegister(op, moved)) continue;
    if (op.type != ZYDIS_OPERAND_TYPE_REGISTER) return false;
    // A 32- or 64-bit destination replaces the whole register (the trap
    // handler then leaves it alone); so does a string pointer's full update.
    const bool only_written = !(op.actions & ZYDIS_OPERAND_ACTION_MASK_READ);
    const bool pointer_update = op.visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN && op.size == 64;
    if (!(only_written && op.size >= 32) && !pointer_update) return false;
  }
  return true;
}

}  // namespace udiag::mmio
