// Register access on a signal context (ucontext_t): general registers with the CPU's write-back
// rules, RFLAGS, and vector/opmask registers in the FXSAVE/XSAVE image the kernel saved.
#pragma once

#include <Zydis/Zydis.h>

#include <cstddef>
#include <cstdint>
#include <sys/ucontext.h>

namespace udiag::mmio {

// Status flags the emulator computes (CF PF AF ZF SF OF).
inline constexpr uint64_t kStatusFlags = 0x8D5;
inline constexpr uint64_t kZeroFlag = 0x40;
inline constexpr uint64_t kDirectionFlag = 0x400;

// gregs index (REG_RAX…) of a general register of any width, or -1 for non-GPRs.
int GregIndex(ZydisRegister reg);

// AL, AX, EAX or RAX.
ZydisRegister AccumulatorOfWidth(size_t width);

// Value of a general register of any width (AH..BH read bits 8..15), zero-extended.
uint64_t ReadGpr(const ucontext_t& uc, ZydisRegister reg);

// Writes with the CPU's rules: 32-bit destinations zero-extend to 64 bits, 8/16-bit ones keep
// the other bits, AH..BH replace bits 8..15.
void WriteGpr(ucontext_t* uc, ZydisRegister reg, uint64_t value);

// Replaces the status flags of RFLAGS with those of `flags`.
void MergeStatusFlags(ucontext_t* uc, uint64_t flags);

// Vector registers (XMM/YMM/ZMM 0..31) and opmasks (K0..K7) in the saved FPU state.
class VectorRegisters {
 public:
  explicit VectorRegisters(const ucontext_t& uc);

  // True if the frame holds `reg` (XMM always; YMM/ZMM/opmask need the XSAVE component).
  bool Has(ZydisRegister reg) const;
  // Bytes of the largest vector register the frame holds (16, 32 or 64): VEX/EVEX writes zero
  // everything above their vector length up to here.
  size_t MaxVectorBytes() const;

  // Reads the whole register (64 bytes; bytes beyond its class are read as the frame has them).
  void Read(ZydisRegister reg, uint8_t out[64]) const;
  // Writes bytes [0, len) of the full (ZMM-sized) register, marking the XSAVE components in use.
  void Write(ZydisRegister reg, const uint8_t* bytes, size_t len);

  uint64_t ReadOpmask(ZydisRegister reg) const;

 private:
  uint8_t* Component(int feature) const;  // nullptr if the frame does not hold it
  void MarkInUse(int feature);

  uint8_t* fxsave_ = nullptr;
  uint64_t frame_features_ = 0;
};

}  // namespace udiag::mmio
