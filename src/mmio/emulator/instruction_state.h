// What Decode leaves in DecodedInstruction::decoder_state for Execute: the Zydis decoding and the
// emulation recipe chosen for it.
#pragma once

#include <Zydis/Zydis.h>

#include <cstdint>
#include <new>

#include "mmio/emulator/emulator.h"
#include "mmio/emulator/host_ops.h"

namespace udiag::mmio {

enum class Recipe : uint8_t {
  kMove,            // MOV, MOVNTI: dst = src
  kExtend,          // MOVZX, MOVSX, MOVSXD
  kByteSwapMove,    // MOVBE
  kPush,            // PUSH m
  kPop,             // POP m
  kAlu,             // ALU/shift/bit ops, see `alu`
  kExchange,        // XCHG (always atomic)
  kExchangeAdd,     // XADD
  kCompareExchange, // CMPXCHG
  kCompareExchangeDouble,  // CMPXCHG8B / CMPXCHG16B
  kSetCondition,    // SETcc m8
  kConditionalMove, // CMOVcc r, m
  kStringMove,      // MOVS
  kStringStore,     // STOS
  kStringLoad,      // LODS
  kVectorMove,      // SSE/AVX/AVX-512 moves (masked EVEX element-wise)
  kVectorBroadcast, // VPBROADCAST*, VBROADCASTSS/SD from memory
};

struct InstructionState {
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT];
  Recipe recipe;
  AluOp alu;
  uint8_t memory_operand;  // index into operands of the (first) memory operand
  bool rep;                // REP-prefixed string form
  bool load_zeroes_to_128; // legacy MOVD/MOVQ/MOVSS/MOVSD loads clear the rest of the XMM register
};

static_assert(sizeof(InstructionState) <= kDecoderStateSize, "grow kDecoderStateSize");
static_assert(alignof(InstructionState) <= 16, "decoder_state is 16-byte aligned");

inline InstructionState& StateOf(DecodedInstruction& insn) {
  return *std::launder(reinterpret_cast<InstructionState*>(insn.decoder_state));
}
inline const InstructionState& StateOf(const DecodedInstruction& insn) {
  return *std::launder(reinterpret_cast<const InstructionState*>(insn.decoder_state));
}

}  // namespace udiag::mmio
