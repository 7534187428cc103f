// Design B' moves the address register of the memory operand onto the alias
// view for one single step. That is only correct when the instruction uses
// that register for nothing else: `mov (%rax), %ax` would merge the loaded
// bits into the moved register, `add %rax, (%rax)` would add the moved value.
// Exceptions: a 32/64-bit destination that replaces the register (`mov
// (%rdx), %edx`), and a string instruction's own pointer update, which the
// trap handler moves back. Async-signal-safe.
#pragma once

#include "mmio/emulator/emulator.h"

namespace udiag::mmio {

// True when rebasing the memory operand's base (or index) register is safe.
bool RebaseIsSafe(const DecodedInstruction& insn);

}  // namespace udiag::mmio
