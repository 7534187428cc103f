#include "mmio/emulator/machine_context.h"

#include <cpuid.h>

#include <atomic>
#include <cstring>

namespace udiag::mmio {
namespace {

constexpr int kGregByZydisId[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP,
                                    REG_RSI, REG_RDI, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                    REG_R12, REG_R13, REG_R14, REG_R15};

bool IsHighByte(ZydisRegister reg) {
  return reg == ZYDIS_REGISTER_AH || reg == ZYDIS_REGISTER_CH || reg == ZYDIS_REGISTER_DH ||
         reg == ZYDIS_REGISTER_BH;
}

// XSAVE state components (Intel SDM vol. 1 §13.1).
constexpr int kFeatureYmmHi128 = 2;
constexpr int kFeatureOpmask = 5;
constexpr int kFeatureZmmHi256 = 6;
constexpr int kFeatureHi16Zmm = 7;
constexpr int kFeatureCount = 8;

// Layout facts of the FXSAVE image and the XSAVE header (both fixed by the architecture) and the
// kernel's software bytes in the FXSAVE reserved area (asm/sigcontext.h: struct _fpx_sw_bytes).
constexpr size_t kXmmOffset = 160;
constexpr size_t kSwBytesOffset = 464;
constexpr size_t kXstateBvOffset = 512;
constexpr uint32_t kFpXstateMagic1 = 0x46505853;
constexpr unsigned long kUcFpXstate = 0x1;

struct SwBytes {
  uint32_t magic1;
  uint32_t extended_size;
  uint64_t xfeatures;
  uint32_t xstate_size;
};

struct ComponentLayout {
  uint32_t offset;
  uint32_t size;
};

// Standard-format offsets from CPUID leaf 0xD. Cached in relaxed atomics: racing first callers
// compute the same values, and no lock or guard variable is involved (signal handler).
ComponentLayout Layout(int feature) {
  static std::atomic<uint64_t> cache[kFeatureCount];
  uint64_t packed = cache[feature].load(std::memory_order_relaxed);
  if (packed == 0) {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    __cpuid_count(0xD, feature, eax, ebx, ecx, edx);
    packed = (uint64_t{ebx} << 32) | eax | (uint64_t{1} << 31);  // bit 31 marks "computed"
    cache[feature].store(packed, std::memory_order_relaxed);
  }
  return {static_cast<uint32_t>(packed >> 32), static_cast<uint32_t>(packed & 0x7FFFFFFF)};
}

}  // namespace

int GregIndex(ZydisRegister reg) {
  const ZydisRegisterClass cls = ZydisRegisterGetClass(reg);
  if (cls != ZYDIS_REGCLASS_GPR8 && cls != ZYDIS_REGCLASS_GPR16 && cls != ZYDIS_REGCLASS_GPR32 &&
      cls != ZYDIS_REGCLASS_GPR64) {
    return -1;
  }
  const ZydisRegister full = IsHighByte(reg)
                                 ? static_cast<ZydisRegister>(ZYDIS_REGISTER_RAX + (reg - ZYDIS_REGISTER_AH))
                                 : ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg);
  return kGregByZydisId[ZydisRegisterGetId(full)];
}

ZydisRegister AccumulatorOfWidth(size_t width) {
  switch (width) {
    case 1: return ZYDIS_REGISTER_AL;
    case 2: return ZYDIS_REGISTER_AX;
    case 4: return ZYDIS_REGISTER_EAX;
    default: return ZYDIS_REGISTER_RAX;
  }
}

uint64_t ReadGpr(const ucontext_t& uc, ZydisRegister reg) {
  const uint64_t full = static_cast<uint64_t>(uc.uc_mcontext.gregs[GregIndex(reg)]);
  if (IsHighByte(reg)) return (full >> 8) & 0xFF;
  switch (ZydisRegisterGetClass(reg)) {
    case ZYDIS_REGCLASS_GPR8: return full & 0xFF;
    case ZYDIS_REGCLASS_GPR16: return full & 0xFFFF;
    case ZYDIS_REGCLASS_GPR32: return full & 0xFFFFFFFF;
    default: return full;
  }
}

void WriteGpr(ucontext_t* uc, ZydisRegister reg, uint64_t value) {
  greg_t& slot = uc->uc_mcontext.gregs[GregIndex(reg)];
  const uint64_t old = static_cast<uint64_t>(slot);
  uint64_t updated;
  if (IsHighByte(reg)) {
    updated = (old & ~uint64_t{0xFF00}) | ((value & 0xFF) << 8);
  } else {
    switch (ZydisRegisterGetClass(reg)) {
      case ZYDIS_REGCLASS_GPR8: updated = (old & ~uint64_t{0xFF}) | (value & 0xFF); break;
      case ZYDIS_REGCLASS_GPR16: updated = (old & ~uint64_t{0xFFFF}) | (value & 0xFFFF); break;
      case ZYDIS_REGCLASS_GPR32: updated = value & 0xFFFFFFFF; break;
      default: updated = value; break;
    }
  }
  slot = static_cast<greg_t>(updated);
}

void MergeStatusFlags(ucontext_t* uc, uint64_t flags) {
  greg_t& efl = uc->uc_mcontext.gregs[REG_EFL];
  efl = static_cast<greg_t>((static_cast<uint64_t>(efl) & ~kStatusFlags) | (flags & kStatusFlags));
}

VectorRegisters::VectorRegisters(const ucontext_t& uc)
    : fxsave_(reinterpret_cast<uint8_t*>(uc.uc_mcontext.fpregs)) {
  if (fxsave_ == nullptr || (uc.uc_flags & kUcFpXstate) == 0) return;
  SwBytes sw;
  memcpy(&sw, fxsave_ + kSwBytesOffset, sizeof(sw));
  if (sw.magic1 != kFpXstateMagic1) return;
  for (int feature = kFeatureYmmHi128; feature < kFeatureCount; ++feature) {
    const ComponentLayout layout = Layout(feature);
    if ((sw.xfeatures >> feature & 1) != 0 && layout.size != 0 &&
        layout.offset + layout.size <= sw.xstate_size) {
      frame_features_ |= uint64_t{1} << feature;
    }
  }
}

uint8_t* VectorRegisters::Component(int feature) const {
  if ((frame_features_ >> feature & 1) == 0) return nullptr;
  return fxsave_ + Layout(feature).offset;
}

void VectorRegisters::MarkInUse(int feature) {
  uint64_t xstate_bv;
  memcpy(&xstate_bv, fxsave_ + kXstateBvOffset, sizeof(xstate_bv));
  if ((xstate_bv >> feature & 1) != 0) return;
  // A component not in use is in its initial state (zero) whatever its bytes say.
  memset(Component(feature), 0, Layout(feature).size);
  xstate_bv |= uint64_t{1} << feature;
  memcpy(fxsave_ + kXstateBvOffset, &xstate_bv, sizeof(xstate_bv));
}

bool VectorRegisters::Has(ZydisRegister reg) const {
  if (fxsave_ == nullptr) return false;
  const int id = ZydisRegisterGetId(reg);
  switch (ZydisRegisterGetClass(reg)) {
    case ZYDIS_REGCLASS_XMM:
    case ZYDIS_REGCLASS_YMM:
    case ZYDIS_REGCLASS_ZMM:
      // Registers 16..31 and anything wider than YMM exist only with AVX-512 state.
      if (id >= 16 || ZydisRegisterGetClass(reg) == ZYDIS_REGCLASS_ZMM) {
        return MaxVectorBytes() == 64;
      }
      return ZydisRegisterGetClass(reg) == ZYDIS_REGCLASS_XMM || MaxVectorBytes() >= 32;
    case ZYDIS_REGCLASS_MASK: return Component(kFeatureOpmask) != nullptr;
    default: return false;
  }
}

size_t VectorRegisters::MaxVectorBytes() const {
  if (Component(kFeatureZmmHi256) && Component(kFeatureHi16Zmm) && Component(kFeatureYmmHi128)) {
    return 64;
  }
  return Component(kFeatureYmmHi128) ? 32 : 16;
}

namespace {

// Where bytes [begin, end) of vector register `id` live: pointer into the frame and XSAVE feature
// (-1 for the FXSAVE image, always in use).
struct VectorSlice {
  size_t begin, end;
  int feature;
  size_t offset_in_component;
};

int Slices(int id, VectorSlice out[3]) {
  if (id >= 16) {
    out[0] = {0, 64, kFeatureHi16Zmm, static_cast<size_t>(id - 16) * 64};
    return 1;
  }
  out[0] = {0, 16, -1, kXmmOffset + static_cast<size_t>(id) * 16};
  out[1] = {16, 32, kFeatureYmmHi128, static_cast<size_t>(id) * 16};
  out[2] = {32, 64, kFeatureZmmHi256, static_cast<size_t>(id) * 32};
  return 3;
}

bool InUse(const uint8_t* fxsave, int feature) {
  uint64_t xstate_bv;
  memcpy(&xstate_bv, fxsave + kXstateBvOffset, sizeof(xstate_bv));
  return (xstate_bv >> feature & 1) != 0;
}

}  // namespace

void VectorRegisters::Read(ZydisRegister reg, uint8_t out[64]) const {
  memset(out, 0, 64);
  VectorSlice slices[3];
  const int count = Slices(ZydisRegisterGetId(reg), slices);
  for (int i = 0; i < count; ++i) {
    const VectorSlice& s = slices[i];
    if (s.feature < 0) {
      memcpy(out + s.begin, fxsave_ + s.offset_in_component, s.end - s.begin);
    } else if (uint8_t* base = Component(s.feature); base && InUse(fxsave_, s.feature)) {
      memcpy(out + s.begin, base + s.offset_in_component, s.end - s.begin);
    }
  }
}

void VectorRegisters::Write(ZydisRegister reg, const uint8_t* bytes, size_t len) {
  VectorSlice slices[3];
  const int count = Slices(ZydisRegisterGetId(reg), slices);
  for (int i = 0; i < count; ++i) {
    const VectorSlice& s = slices[i];
    if (s.begin >= len) break;
    const size_t end = s.end < len ? s.end : len;
    uint8_t* dest;
    if (s.feature < 0) {
      dest = fxsave_ + s.offset_in_component;
    } else {
      uint8_t* base = Component(s.feature);
      if (base == nullptr) break;  // the frame has no such bytes; Has() was checked by Decode
      MarkInUse(s.feature);
      dest = base + s.offset_in_component;
    }
    memcpy(dest, bytes + s.begin, end - s.begin);
  }
}

uint64_t VectorRegisters::ReadOpmask(ZydisRegister reg) const {
  const uint8_t* base = Component(kFeatureOpmask);
  if (base == nullptr || !InUse(fxsave_, kFeatureOpmask)) return 0;
  uint64_t value;
  memcpy(&value, base + static_cast<size_t>(ZydisRegisterGetId(reg)) * 8, sizeof(value));
  return value;
}

}  // namespace udiag::mmio
