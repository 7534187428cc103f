// Integer operations run on the host CPU so results and status flags (including the ones the
// manuals call undefined) are exactly what the faulting instruction would have produced; plus the
// atomic primitives LOCK/XCHG forms need on the alias view.
#pragma once

#include <cstddef>
#include <cstdint>

namespace udiag::mmio {

enum class AluOp {
  kAdd, kOr, kAdc, kSbb, kAnd, kSub, kXor, kCmp, kTest,  // dst op= src
  kInc, kDec, kNot, kNeg,                                // dst = op dst
  kRol, kRor, kRcl, kRcr, kShl, kShr, kSar,              // src is the count (CL / imm / 1)
  kBt, kBts, kBtr, kBtc,                                 // src is the bit offset
};

// True for operations whose result is not written back (CMP, TEST, BT).
bool AluOpIsReadOnly(AluOp op);

// Runs `op` on `width`-byte operands (1/2/4/8; BT* 2/4/8) with the status flags taken from
// *flags and stores the resulting status flags back into *flags. Returns the result (masked to
// `width`); for read-only operations that is `dst`.
uint64_t HostAlu(AluOp op, size_t width, uint64_t dst, uint64_t src, uint64_t* flags);

// Atomic operations on a never-faulting view, `width` 1/2/4/8 bytes.
uint64_t AtomicExchange(uint8_t* view, size_t width, uint64_t value);
// LOCK CMPXCHG: returns true if *view was `expected` (then `desired` is stored); *observed gets
// the value found.
bool AtomicCompareExchange(uint8_t* view, size_t width, uint64_t expected, uint64_t desired,
                           uint64_t* observed);

// CMPXCHG8B/16B (`width` 8 or 16) executed on the view, locked or not, like the CPU: compares
// expected[] (EDX:EAX / RDX:RAX) with memory, stores desired[] (ECX:EBX / RCX:RBX) if equal,
// else loads memory into expected[]. Returns ZF.
bool CompareExchangeDouble(uint8_t* view, size_t width, bool locked, uint64_t expected[2],
                           const uint64_t desired[2]);

}  // namespace udiag::mmio
