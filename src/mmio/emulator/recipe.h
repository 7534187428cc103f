// Maps a decoded instruction to the emulation recipe Execute follows, or rejects it.
#pragma once

#include "mmio/emulator/instruction_state.h"

namespace udiag::mmio {

// Fills state->recipe/alu/rep/load_zeroes_to_128 from state->insn and operands; false if the
// instruction is not one the emulator supports.
bool ChooseRecipe(InstructionState* state);

// EVEX with an opmask other than K0: only the enabled elements are accessed.
bool IsMasked(const ZydisDecodedInstruction& insn);

}  // namespace udiag::mmio
