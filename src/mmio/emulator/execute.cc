#include "mmio/emulator/execute_internal.h"

namespace udiag::mmio {

bool Execute(const DecodedInstruction& insn, ucontext_t* uc, AliasFn alias, void* ctx,
             ExecuteResult* result) {
  memset(result, 0, sizeof(*result));
  const InstructionState& state = StateOf(insn);
  const Emulation emulation{insn, state, uc, alias, ctx, result};
  switch (state.recipe) {
    case Recipe::kStringMove:
    case Recipe::kStringStore:
    case Recipe::kStringLoad: return ExecuteString(emulation);
    case Recipe::kVectorMove:
    case Recipe::kVectorBroadcast: return ExecuteVector(emulation);
    default: return ExecuteInteger(emulation);
  }
}

}  // namespace udiag::mmio
