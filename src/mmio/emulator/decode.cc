// Decode: Zydis decoding of the faulting instruction, recipe choice, and the memory operand's
// address computed from the signal context.
#include <asm/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "mmio/emulator/emulator.h"
#include "mmio/emulator/machine_context.h"
#include "mmio/emulator/recipe.h"

namespace udiag::mmio {
namespace {

constexpr size_t kMaxInstructionLength = 15;
constexpr uintptr_t kPageSize = 4096;

// FS/GS base of the faulting thread, which is the thread running the handler.
uint64_t SegmentBase(ZydisRegister segment) {
  if (segment != ZYDIS_REGISTER_FS && segment != ZYDIS_REGISTER_GS) return 0;
  const int saved_errno = errno;
  unsigned long base = 0;
  syscall(SYS_arch_prctl, segment == ZYDIS_REGISTER_FS ? ARCH_GET_FS : ARCH_GET_GS, &base);
  errno = saved_errno;
  return base;
}

bool IsMemory(const ZydisDecodedOperand& op) {
  return op.type == ZYDIS_OPERAND_TYPE_MEMORY && op.mem.type == ZYDIS_MEMOP_TYPE_MEM;
}

uint8_t DirectionOf(const ZydisDecodedOperand& op) {
  uint8_t direction = 0;
  if (op.actions & ZYDIS_OPERAND_ACTION_MASK_READ) direction |= kRead;
  if (op.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) direction |= kWrite;
  return direction;
}

uint64_t EffectiveAddress(const ucontext_t& uc, const ZydisDecodedInstruction& insn,
                          const ZydisDecodedOperand& op, uintptr_t ip) {
  uint64_t address = static_cast<uint64_t>(op.mem.disp.value);
  if (op.mem.base == ZYDIS_REGISTER_RIP || op.mem.base == ZYDIS_REGISTER_EIP) {
    address += ip + insn.length;
  } else if (op.mem.base != ZYDIS_REGISTER_NONE) {
    address += ReadGpr(uc, op.mem.base);
  }
  if (op.mem.index != ZYDIS_REGISTER_NONE) address += ReadGpr(uc, op.mem.index) * op.mem.scale;
  if (insn.address_width == 32) address &= 0xFFFFFFFF;
  return address + SegmentBase(op.mem.segment);
}

// BT* with a register bit offset address a bit string: the unit accessed is
// base + (sign-extended offset >> log2(bits)) * bytes, not the operand's address.
int64_t BitStringDisplacement(const ucontext_t& uc, const InstructionState& s) {
  const ZydisDecodedOperand& offset = s.operands[1];
  if (s.recipe != Recipe::kAlu || offset.type != ZYDIS_OPERAND_TYPE_REGISTER ||
      (s.alu != AluOp::kBt && s.alu != AluOp::kBts && s.alu != AluOp::kBtr &&
       s.alu != AluOp::kBtc)) {
    return 0;
  }
  const unsigned bits = s.operands[0].size;
  const int shift = 64 - bits;
  const int64_t bit = static_cast<int64_t>(ReadGpr(uc, offset.reg.value) << shift) >> shift;
  return (bit >> __builtin_ctz(bits)) * static_cast<int64_t>(bits / 8);
}

// Vector recipes need every register they name to be in the signal frame.
bool FrameHoldsRegisters(const ucontext_t& uc, const InstructionState& s) {
  if (s.recipe != Recipe::kVectorMove && s.recipe != Recipe::kVectorBroadcast) return true;
  const VectorRegisters vectors(uc);
  for (int i = 0; i < s.insn.operand_count_visible; ++i) {
    const ZydisDecodedOperand& op = s.operands[i];
    if (op.type == ZYDIS_OPERAND_TYPE_REGISTER && !vectors.Has(op.reg.value)) return false;
  }
  const ZydisRegister mask = s.insn.avx.mask.reg;
  return mask == ZYDIS_REGISTER_NONE || vectors.Has(mask);
}

bool FillAccess(const ucontext_t& uc, InstructionState& s, DecodedInstruction* out) {
  int memory = -1, second = -1;
  for (int i = 0; i < s.insn.operand_count; ++i) {
    if (!IsMemory(s.operands[i])) continue;
    if (memory < 0) {
      memory = i;
    } else if (second < 0) {
      second = i;
    }
  }
  if (memory < 0) return false;
  // MOVS lists the destination [RDI] first; report the source as the primary (read) access.
  // Other second memory operands are the hidden stack slots of PUSH/POP: not reported.
  if (s.recipe == Recipe::kStringMove && second >= 0) {
    const int destination = memory;
    memory = second;
    second = destination;
  } else {
    second = -1;
  }
  const ZydisDecodedOperand& op = s.operands[memory];
  s.memory_operand = static_cast<uint8_t>(memory);
  out->address = EffectiveAddress(uc, s.insn, op, out->ip) + BitStringDisplacement(uc, s);
  out->width = op.size / 8;
  out->direction = DirectionOf(op);
  // POP computes a RSP-based destination address after incrementing RSP.
  if (s.recipe == Recipe::kPop && op.mem.base == ZYDIS_REGISTER_RSP) out->address += out->width;
  out->second_address = second >= 0 ? EffectiveAddress(uc, s.insn, s.operands[second], out->ip) : 0;
  out->locked = (s.insn.attributes & ZYDIS_ATTRIB_HAS_LOCK) != 0 || s.recipe == Recipe::kExchange;
  out->base_greg = op.mem.base == ZYDIS_REGISTER_NONE || op.mem.base == ZYDIS_REGISTER_RIP
                       ? -1 : GregIndex(op.mem.base);
  out->index_greg = op.mem.index == ZYDIS_REGISTER_NONE ? -1 : GregIndex(op.mem.index);
  out->scale = op.mem.scale;
  out->displacement = op.mem.disp.value;
  out->rip_relative = op.mem.base == ZYDIS_REGISTER_RIP;
  return true;
}

}  // namespace

DecodeStatus Decode(const ucontext_t& uc, DecodedInstruction* out) {
  const uintptr_t ip = static_cast<uintptr_t>(uc.uc_mcontext.gregs[REG_RIP]);
  // The CPU fetched the whole instruction, so its bytes are mapped; bytes after it may not be.
  // Try what lies in RIP's page first and read on only if the instruction continues.
  const size_t in_page = kPageSize - (ip & (kPageSize - 1));
  size_t available = in_page < kMaxInstructionLength ? in_page : kMaxInstructionLength;
  memset(out, 0, offsetof(DecodedInstruction, decoder_state));
  out->ip = ip;
  // Default-initialised: Zydis fills the decoding, ChooseRecipe the rest (no 1 KiB memset).
  InstructionState& s = *new (out->decoder_state) InstructionState;
  ZydisDecoder decoder;
  ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
  ZyanStatus status;
  for (;;) {
    memcpy(out->bytes, reinterpret_cast<const void*>(ip), available);
    status = ZydisDecoderDecodeFull(&decoder, out->bytes, available, &s.insn, s.operands);
    if (status != ZYDIS_STATUS_NO_MORE_DATA || available == kMaxInstructionLength) break;
    available = kMaxInstructionLength;
  }
  if (!ZYAN_SUCCESS(status)) return DecodeStatus::kInvalid;
  out->length = s.insn.length;
  memset(out->bytes + out->length, 0, sizeof(out->bytes) - out->length);
  const bool supported = ChooseRecipe(&s);
  // Accesses are reported even for unsupported instructions (the caller logs and steps them).
  if (!FillAccess(uc, s, out)) return DecodeStatus::kNoMemoryOperand;
  if (!supported || !FrameHoldsRegisters(uc, s)) return DecodeStatus::kUnsupported;
  // PUSH/POP of a register only touch the stack (a hidden operand): not a PUSH/POP m.
  const bool stack_form = s.recipe == Recipe::kPush || s.recipe == Recipe::kPop;
  if (stack_form && s.memory_operand != 0) return DecodeStatus::kUnsupported;
  const bool string_form = s.recipe == Recipe::kStringMove || s.recipe == Recipe::kStringStore ||
                           s.recipe == Recipe::kStringLoad;
  if (string_form && s.insn.address_width != 64) return DecodeStatus::kUnsupported;
  return DecodeStatus::kOk;
}

}  // namespace udiag::mmio
