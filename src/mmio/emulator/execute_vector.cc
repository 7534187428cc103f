// Execute for SSE/AVX/AVX-512 moves and broadcasts. Unmasked accesses are one vector access of
// the instruction's width; EVEX opmasked ones touch only the enabled elements, one access each
// (masked-off elements are neither read nor written, as on the CPU).
#include "mmio/emulator/execute_internal.h"
#include "mmio/emulator/recipe.h"

namespace udiag::mmio {
namespace {

struct VectorShape {
  size_t vector_bytes;   // VL: 16 for legacy SSE, else the instruction's vector length
  size_t element_bytes;  // opmask granularity
  bool masked;
  uint64_t mask;
};

VectorShape ShapeOf(const Emulation& e, const VectorRegisters& vectors) {
  const ZydisDecodedInstruction& insn = e.insn();
  VectorShape shape{16, e.decoded.width, IsMasked(insn), ~uint64_t{0}};
  if (insn.encoding != ZYDIS_INSTRUCTION_ENCODING_LEGACY) shape.vector_bytes = insn.avx.vector_length / 8;
  const size_t element_bits = e.memory_operand().element_size;
  if (e.state.recipe == Recipe::kVectorMove && element_bits >= 8) shape.element_bytes = element_bits / 8;
  if (shape.masked) shape.mask = vectors.ReadOpmask(insn.avx.mask.reg);
  return shape;
}

const ZydisDecodedOperand* VectorOperand(const Emulation& e) {
  for (int i = 0; i < e.insn().operand_count_visible; ++i) {
    const ZydisDecodedOperand& op = e.operand(i);
    if (op.type == ZYDIS_OPERAND_TYPE_REGISTER &&
        ZydisRegisterGetClass(op.reg.value) != ZYDIS_REGCLASS_MASK) {
      return &op;
    }
  }
  return nullptr;
}

// Accesses the enabled elements of [address, address+width) one by one.
template <typename Access>
bool ForEachEnabledElement(const Emulation& e, const VectorShape& shape, Access access) {
  for (size_t offset = 0; offset < e.decoded.width; offset += shape.element_bytes) {
    if ((shape.mask >> (offset / shape.element_bytes) & 1) == 0) continue;
    GuestRange element;
    if (!e.Resolve(&element, e.decoded.address + offset, shape.element_bytes)) return false;
    access(element, offset);
  }
  return true;
}

bool Store(const Emulation& e, const GuestRange& whole, const VectorShape& shape,
           const uint8_t* source) {
  if (!shape.masked) {
    e.WriteRecorded(whole, source);
    return true;
  }
  e.result->did_write = true;
  return ForEachEnabledElement(e, shape, [&](const GuestRange& element, size_t offset) {
    element.Write(source + offset);
    memcpy(e.result->value_written + offset, source + offset, shape.element_bytes);
  });
}

bool Load(const Emulation& e, const GuestRange& whole, const VectorShape& shape, uint8_t* data) {
  if (!shape.masked || e.state.recipe == Recipe::kVectorBroadcast) {
    e.ReadRecorded(whole, data);
    return true;
  }
  e.result->did_read = true;
  return ForEachEnabledElement(e, shape, [&](const GuestRange& element, size_t offset) {
    element.Read(data + offset);
    memcpy(e.result->value_read + offset, data + offset, shape.element_bytes);
  });
}

}  // namespace

bool ExecuteVector(const Emulation& e) {
  VectorRegisters vectors(*e.uc);
  const ZydisDecodedOperand* reg_op = VectorOperand(e);
  GuestRange whole;
  if (reg_op == nullptr || !e.Resolve(&whole, e.decoded.address, e.decoded.width)) return false;
  const VectorShape shape = ShapeOf(e, vectors);
  const ZydisRegister reg = reg_op->reg.value;
  alignas(64) uint8_t value[64];
  vectors.Read(reg, value);
  if (e.decoded.direction & kWrite) {
    if (!Store(e, whole, shape, value)) return false;
    e.AdvanceIp();
    return true;
  }
  // Source vector: the loaded bytes (zero above them) or the broadcast element repeated.
  alignas(64) uint8_t loaded[64] = {}, source[64] = {};
  if (!Load(e, whole, shape, loaded)) return false;
  const size_t copies = e.state.recipe == Recipe::kVectorBroadcast
                            ? shape.vector_bytes / e.decoded.width : 1;
  for (size_t i = 0; i < copies; ++i) memcpy(source + i * e.decoded.width, loaded, e.decoded.width);
  if (e.insn().encoding == ZYDIS_INSTRUCTION_ENCODING_LEGACY) {
    vectors.Write(reg, source, 16);  // legacy SSE keeps bits above 127
  } else {
    // Masked-off elements merge or zero; everything above VL is zeroed.
    const size_t element = e.state.recipe == Recipe::kVectorBroadcast ? e.decoded.width
                                                                       : shape.element_bytes;
    const bool zeroing = e.insn().avx.mask.mode == ZYDIS_MASK_MODE_ZEROING;
    for (size_t offset = 0; offset < 64; offset += element) {
      const bool in_vector = offset < shape.vector_bytes;
      const bool enabled = in_vector && (shape.mask >> (offset / element) & 1) != 0;
      if (enabled) {
        memcpy(value + offset, source + offset, element);
      } else if (!in_vector || zeroing) {
        memset(value + offset, 0, element);
      }
    }
    vectors.Write(reg, value, vectors.MaxVectorBytes());
  }
  e.AdvanceIp();
  return true;
}

}  // namespace udiag::mmio
