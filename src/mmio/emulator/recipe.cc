#include "mmio/emulator/recipe.h"

namespace udiag::mmio {
namespace {

bool IsGpr(ZydisRegister reg) {
  const ZydisRegisterClass cls = ZydisRegisterGetClass(reg);
  return cls == ZYDIS_REGCLASS_GPR8 || cls == ZYDIS_REGCLASS_GPR16 ||
         cls == ZYDIS_REGCLASS_GPR32 || cls == ZYDIS_REGCLASS_GPR64;
}

// Vector registers, and the opmask EVEX forms list among their visible operands.
bool IsVectorOrMask(ZydisRegister reg) {
  const ZydisRegisterClass cls = ZydisRegisterGetClass(reg);
  return cls == ZYDIS_REGCLASS_XMM || cls == ZYDIS_REGCLASS_YMM || cls == ZYDIS_REGCLASS_ZMM ||
         cls == ZYDIS_REGCLASS_MASK;
}



// Visible register operands must all be general (integer recipes) or all vector (vector
// recipes): this rejects MOV to/from segment registers and the MMX forms of MOVD/MOVQ.
bool VisibleRegistersAre(const InstructionState& s, bool (*is_class)(ZydisRegister)) {
  for (int i = 0; i < s.insn.operand_count_visible; ++i) {
    const ZydisDecodedOperand& op = s.operands[i];
    if (op.type == ZYDIS_OPERAND_TYPE_REGISTER && !is_class(op.reg.value)) return false;
  }
  return true;
}

bool AluFor(ZydisMnemonic m, AluOp* op) {
  switch (m) {
    case ZYDIS_MNEMONIC_ADD: *op = AluOp::kAdd; return true;
    case ZYDIS_MNEMONIC_OR: *op = AluOp::kOr; return true;
    case ZYDIS_MNEMONIC_ADC: *op = AluOp::kAdc; return true;
    case ZYDIS_MNEMONIC_SBB: *op = AluOp::kSbb; return true;
    case ZYDIS_MNEMONIC_AND: *op = AluOp::kAnd; return true;
    case ZYDIS_MNEMONIC_SUB: *op = AluOp::kSub; return true;
    case ZYDIS_MNEMONIC_XOR: *op = AluOp::kXor; return true;
    case ZYDIS_MNEMONIC_CMP: *op = AluOp::kCmp; return true;
    case ZYDIS_MNEMONIC_TEST: *op = AluOp::kTest; return true;
    case ZYDIS_MNEMONIC_INC: *op = AluOp::kInc; return true;
    case ZYDIS_MNEMONIC_DEC: *op = AluOp::kDec; return true;
    case ZYDIS_MNEMONIC_NOT: *op = AluOp::kNot; return true;
    case ZYDIS_MNEMONIC_NEG: *op = AluOp::kNeg; return true;
    case ZYDIS_MNEMONIC_ROL: *op = AluOp::kRol; return true;
    case ZYDIS_MNEMONIC_ROR: *op = AluOp::kRor; return true;
    case ZYDIS_MNEMONIC_RCL: *op = AluOp::kRcl; return true;
    case ZYDIS_MNEMONIC_RCR: *op = AluOp::kRcr; return true;
    case ZYDIS_MNEMONIC_SHL: *op = AluOp::kShl; return true;
    case ZYDIS_MNEMONIC_SHR: *op = AluOp::kShr; return true;
    case ZYDIS_MNEMONIC_SAR: *op = AluOp::kSar; return true;
    case ZYDIS_MNEMONIC_BT: *op = AluOp::kBt; return true;
    case ZYDIS_MNEMONIC_BTS: *op = AluOp::kBts; return true;
    case ZYDIS_MNEMONIC_BTR: *op = AluOp::kBtr; return true;
    case ZYDIS_MNEMONIC_BTC: *op = AluOp::kBtc; return true;
    default: return false;
  }
}

bool IntegerRecipe(ZydisMnemonic m, Recipe* recipe) {
  switch (m) {
    case ZYDIS_MNEMONIC_MOV:
    case ZYDIS_MNEMONIC_MOVNTI: *recipe = Recipe::kMove; return true;
    case ZYDIS_MNEMONIC_MOVZX:
    case ZYDIS_MNEMONIC_MOVSX:
    case ZYDIS_MNEMONIC_MOVSXD: *recipe = Recipe::kExtend; return true;
    case ZYDIS_MNEMONIC_MOVBE: *recipe = Recipe::kByteSwapMove; return true;
    case ZYDIS_MNEMONIC_PUSH: *recipe = Recipe::kPush; return true;
    case ZYDIS_MNEMONIC_POP: *recipe = Recipe::kPop; return true;
    case ZYDIS_MNEMONIC_XCHG: *recipe = Recipe::kExchange; return true;
    case ZYDIS_MNEMONIC_XADD: *recipe = Recipe::kExchangeAdd; return true;
    case ZYDIS_MNEMONIC_CMPXCHG: *recipe = Recipe::kCompareExchange; return true;
    case ZYDIS_MNEMONIC_CMPXCHG8B:
    case ZYDIS_MNEMONIC_CMPXCHG16B: *recipe = Recipe::kCompareExchangeDouble; return true;
    case ZYDIS_MNEMONIC_MOVSB: case ZYDIS_MNEMONIC_MOVSW: case ZYDIS_MNEMONIC_MOVSD:
    case ZYDIS_MNEMONIC_MOVSQ: *recipe = Recipe::kStringMove; return true;
    case ZYDIS_MNEMONIC_STOSB: case ZYDIS_MNEMONIC_STOSW: case ZYDIS_MNEMONIC_STOSD:
    case ZYDIS_MNEMONIC_STOSQ: *recipe = Recipe::kStringStore; return true;
    case ZYDIS_MNEMONIC_LODSB: case ZYDIS_MNEMONIC_LODSW: case ZYDIS_MNEMONIC_LODSD:
    case ZYDIS_MNEMONIC_LODSQ: *recipe = Recipe::kStringLoad; return true;
    default: break;
  }
  if (m >= ZYDIS_MNEMONIC_SETB && m <= ZYDIS_MNEMONIC_SETZ && m != ZYDIS_MNEMONIC_SETSSBSY) {
    *recipe = Recipe::kSetCondition;
    return true;
  }
  if (m >= ZYDIS_MNEMONIC_CMOVB && m <= ZYDIS_MNEMONIC_CMOVZ) {
    *recipe = Recipe::kConditionalMove;
    return true;
  }
  return false;
}

bool VectorRecipe(ZydisMnemonic m, Recipe* recipe, bool* zeroes_to_128) {
  *zeroes_to_128 = false;
  switch (m) {
    case ZYDIS_MNEMONIC_MOVD: case ZYDIS_MNEMONIC_MOVQ: case ZYDIS_MNEMONIC_MOVSS:
    case ZYDIS_MNEMONIC_MOVSD:
      *zeroes_to_128 = true;
      [[fallthrough]];
    case ZYDIS_MNEMONIC_MOVDQA: case ZYDIS_MNEMONIC_MOVDQU: case ZYDIS_MNEMONIC_MOVAPS:
    case ZYDIS_MNEMONIC_MOVUPS: case ZYDIS_MNEMONIC_MOVAPD: case ZYDIS_MNEMONIC_MOVUPD:
    case ZYDIS_MNEMONIC_MOVNTDQ: case ZYDIS_MNEMONIC_MOVNTPS: case ZYDIS_MNEMONIC_MOVNTPD:
    case ZYDIS_MNEMONIC_MOVNTDQA: case ZYDIS_MNEMONIC_VMOVD: case ZYDIS_MNEMONIC_VMOVQ:
    case ZYDIS_MNEMONIC_VMOVSS: case ZYDIS_MNEMONIC_VMOVSD: case ZYDIS_MNEMONIC_VMOVDQA:
    case ZYDIS_MNEMONIC_VMOVDQU: case ZYDIS_MNEMONIC_VMOVAPS: case ZYDIS_MNEMONIC_VMOVUPS:
    case ZYDIS_MNEMONIC_VMOVAPD: case ZYDIS_MNEMONIC_VMOVUPD: case ZYDIS_MNEMONIC_VMOVNTDQ:
    case ZYDIS_MNEMONIC_VMOVNTPS: case ZYDIS_MNEMONIC_VMOVNTPD: case ZYDIS_MNEMONIC_VMOVNTDQA:
    case ZYDIS_MNEMONIC_VMOVDQU8: case ZYDIS_MNEMONIC_VMOVDQU16: case ZYDIS_MNEMONIC_VMOVDQU32:
    case ZYDIS_MNEMONIC_VMOVDQU64: case ZYDIS_MNEMONIC_VMOVDQA32: case ZYDIS_MNEMONIC_VMOVDQA64:
      *recipe = Recipe::kVectorMove;
      return true;
    case ZYDIS_MNEMONIC_VPBROADCASTB: case ZYDIS_MNEMONIC_VPBROADCASTW:
    case ZYDIS_MNEMONIC_VPBROADCASTD: case ZYDIS_MNEMONIC_VPBROADCASTQ:
    case ZYDIS_MNEMONIC_VBROADCASTSS: case ZYDIS_MNEMONIC_VBROADCASTSD:
      *recipe = Recipe::kVectorBroadcast;
      return true;
    default: return false;
  }
}

}  // namespace

bool IsMasked(const ZydisDecodedInstruction& insn) {
  return insn.encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX &&
         insn.avx.mask.reg != ZYDIS_REGISTER_NONE && insn.avx.mask.reg != ZYDIS_REGISTER_K0;
}

bool ChooseRecipe(InstructionState* s) {
  const ZydisDecodedInstruction& insn = s->insn;
  s->rep = (insn.attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE |
                               ZYDIS_ATTRIB_HAS_REPNE)) != 0;
  s->load_zeroes_to_128 = false;
  s->recipe = Recipe::kMove;  // overwritten below; defined even for rejected instructions
  s->alu = AluOp::kAdd;
  // The SSE MOVSD (F2 0F 10/11) shares its mnemonic with the string MOVSD (A5).
  const bool string_map = insn.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT;
  if (AluFor(insn.mnemonic, &s->alu)) {
    s->recipe = Recipe::kAlu;
    return VisibleRegistersAre(*s, IsGpr);
  }
  if ((insn.mnemonic != ZYDIS_MNEMONIC_MOVSD || string_map) &&
      IntegerRecipe(insn.mnemonic, &s->recipe)) {
    return VisibleRegistersAre(*s, IsGpr);
  }
  if (VectorRecipe(insn.mnemonic, &s->recipe, &s->load_zeroes_to_128)) {
    // Masked scalar moves zero the elements above the first whatever the mask: not modelled.
    const bool masked_scalar = IsMasked(insn) && (insn.mnemonic == ZYDIS_MNEMONIC_VMOVSS ||
                                                  insn.mnemonic == ZYDIS_MNEMONIC_VMOVSD);
    return !masked_scalar && VisibleRegistersAre(*s, IsVectorOrMask);
  }
  return false;
}

}  // namespace udiag::mmio
