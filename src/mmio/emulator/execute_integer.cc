// Execute for general-register instructions: moves, ALU/shift/bit operations, exchanges,
// conditional forms, PUSH/POP m.
#include "mmio/emulator/execute_internal.h"

namespace udiag::mmio {
namespace {

uint64_t Load(const GuestRange& range, const Emulation& e) {
  uint64_t value = 0;
  e.ReadRecorded(range, reinterpret_cast<uint8_t*>(&value));
  return value;
}

void Store(const GuestRange& range, const Emulation& e, uint64_t value) {
  e.WriteRecorded(range, reinterpret_cast<const uint8_t*>(&value));
}

// Value of a register or immediate operand. Zydis sign-extends signed immediates (imm8/imm32
// of a wider operation) to 64 bits; users take the low bytes they need.
uint64_t ValueOf(const Emulation& e, const ZydisDecodedOperand& op) {
  if (op.type == ZYDIS_OPERAND_TYPE_IMMEDIATE) return op.imm.value.u;
  return ReadGpr(*e.uc, op.reg.value);
}

uint64_t SignExtend(uint64_t value, size_t width) {
  const int shift = 64 - static_cast<int>(8 * width);
  return static_cast<uint64_t>(static_cast<int64_t>(value << shift) >> shift);
}

uint64_t ByteSwap(uint64_t value, size_t width) {
  return __builtin_bswap64(value) >> (64 - 8 * width);
}

// Jcc/SETcc/CMOVcc condition in the low nibble of the opcode.
bool ConditionHolds(uint8_t opcode, uint64_t flags) {
  const bool cf = flags & 0x1, pf = flags & 0x4, zf = flags & 0x40, sf = flags & 0x80,
             of = flags & 0x800;
  bool holds = false;
  switch ((opcode & 0xF) >> 1) {
    case 0: holds = of; break;
    case 1: holds = cf; break;
    case 2: holds = zf; break;
    case 3: holds = cf || zf; break;
    case 4: holds = sf; break;
    case 5: holds = pf; break;
    case 6: holds = sf != of; break;
    case 7: holds = zf || sf != of; break;
  }
  return (opcode & 1) ? !holds : holds;
}

// LOCK RMW on memory: compare-and-swap loop on the alias, the op computed on the host.
template <typename Compute>
uint64_t LockedUpdate(const GuestRange& range, size_t width, Compute compute, uint64_t* new_value) {
  uint64_t old = 0;
  LoadExact(range.view(), width, reinterpret_cast<uint8_t*>(&old));
  for (;;) {
    *new_value = compute(old);
    uint64_t observed;
    if (AtomicCompareExchange(range.view(), width, old, *new_value, &observed)) return old;
    old = observed;
  }
}

bool ExecuteAlu(const Emulation& e, const GuestRange& mem) {
  const size_t width = e.operand(0).size / 8;
  const bool binary = e.insn().operand_count_visible >= 2;
  uint64_t flags = e.flags();
  if (!e.memory_is(0)) {  // register destination, memory source
    const uint64_t result = HostAlu(e.state.alu, width, ReadGpr(*e.uc, e.operand(0).reg.value),
                                    Load(mem, e), &flags);
    if (!AluOpIsReadOnly(e.state.alu)) WriteGpr(e.uc, e.operand(0).reg.value, result);
  } else {
    const uint64_t src = binary ? ValueOf(e, e.operand(1)) : 0;
    if (e.decoded.locked) {
      uint64_t final_flags = flags, written;
      const uint64_t old = LockedUpdate(mem, width, [&](uint64_t value) {
        final_flags = flags;
        return HostAlu(e.state.alu, width, value, src, &final_flags);
      }, &written);
      e.NoteRead(old);
      e.NoteWrite(written);
      flags = final_flags;
    } else {
      const uint64_t result = HostAlu(e.state.alu, width, Load(mem, e), src, &flags);
      if (!AluOpIsReadOnly(e.state.alu)) Store(mem, e, result);
    }
  }
  MergeStatusFlags(e.uc, flags);
  return true;
}

bool ExecuteExchangeAdd(const Emulation& e, const GuestRange& mem) {
  const size_t width = e.decoded.width;
  const ZydisRegister reg = e.operand(1).reg.value;
  const uint64_t addend = ReadGpr(*e.uc, reg);
  uint64_t flags = e.flags(), old;
  if (e.decoded.locked) {
    uint64_t sum, final_flags = flags;
    old = LockedUpdate(mem, width, [&](uint64_t value) {
      final_flags = flags;
      return HostAlu(AluOp::kAdd, width, value, addend, &final_flags);
    }, &sum);
    e.NoteRead(old);
    e.NoteWrite(sum);
    flags = final_flags;
  } else {
    old = Load(mem, e);
    Store(mem, e, HostAlu(AluOp::kAdd, width, old, addend, &flags));
  }
  WriteGpr(e.uc, reg, old);
  MergeStatusFlags(e.uc, flags);
  return true;
}

bool ExecuteCompareExchange(const Emulation& e, const GuestRange& mem) {
  const size_t width = e.decoded.width;
  const ZydisRegister accumulator = AccumulatorOfWidth(width);
  const uint64_t expected = ReadGpr(*e.uc, accumulator);
  const uint64_t desired = ReadGpr(*e.uc, e.operand(1).reg.value);
  uint64_t old;
  bool equal;
  if (e.decoded.locked) {
    equal = AtomicCompareExchange(mem.view(), width, expected, desired, &old);
    e.NoteRead(old);
    e.NoteWrite(equal ? desired : old);
  } else {
    old = Load(mem, e);
    equal = old == expected;
    Store(mem, e, equal ? desired : old);  // the CPU writes the old value back on failure
  }
  uint64_t flags = e.flags();
  HostAlu(AluOp::kCmp, width, expected, old, &flags);
  if (!equal) WriteGpr(e.uc, accumulator, old);
  MergeStatusFlags(e.uc, flags);
  return true;
}

bool ExecuteCompareExchangeDouble(const Emulation& e, const GuestRange& mem) {
  const size_t width = e.decoded.width;
  if (width == 16 && (e.decoded.address & 15) != 0) return false;  // the CPU raises #GP
  uint64_t expected[2] = {static_cast<uint64_t>(e.greg(REG_RAX)),
                          static_cast<uint64_t>(e.greg(REG_RDX))};
  const uint64_t desired[2] = {static_cast<uint64_t>(e.greg(REG_RBX)),
                               static_cast<uint64_t>(e.greg(REG_RCX))};
  const uint64_t half = width == 16 ? ~uint64_t{0} : 0xFFFFFFFF;
  const uint64_t before[2] = {expected[0] & half, expected[1] & half};
  const bool equal = CompareExchangeDouble(mem.view(), width, e.decoded.locked, expected, desired);
  // Memory held `before` on success, else what the CPU loaded into RDX:RAX.
  const uint64_t old[2] = {equal ? before[0] : expected[0] & half,
                           equal ? before[1] : expected[1] & half};
  const uint64_t written[2] = {equal ? desired[0] & half : old[0],
                               equal ? desired[1] & half : old[1]};
  const size_t part = width / 2;
  memcpy(e.result->value_read, &old[0], part);
  memcpy(e.result->value_read + part, &old[1], part);
  memcpy(e.result->value_written, &written[0], part);
  memcpy(e.result->value_written + part, &written[1], part);
  e.result->did_read = e.result->did_write = true;
  if (!equal) {
    e.greg(REG_RAX) = static_cast<greg_t>(expected[0]);
    e.greg(REG_RDX) = static_cast<greg_t>(expected[1]);
  }
  MergeStatusFlags(e.uc, (e.flags() & ~kZeroFlag) | (equal ? kZeroFlag : 0));
  return true;
}

bool ExecutePushPop(const Emulation& e, const GuestRange& mem) {
  const size_t width = e.decoded.width;
  const uint64_t rsp = static_cast<uint64_t>(e.greg(REG_RSP));
  const bool push = e.state.recipe == Recipe::kPush;
  GuestRange stack;
  if (!e.Resolve(&stack, push ? rsp - width : rsp, width)) return false;
  uint64_t value = 0;
  if (push) {
    value = Load(mem, e);
    stack.Write(reinterpret_cast<const uint8_t*>(&value));
    e.greg(REG_RSP) = static_cast<greg_t>(rsp - width);
  } else {
    stack.Read(reinterpret_cast<uint8_t*>(&value));
    Store(mem, e, value);
    e.greg(REG_RSP) = static_cast<greg_t>(rsp + width);
  }
  return true;
}

// Register destination (operand 0) or memory destination for the plain move family.
bool ExecuteMoveFamily(const Emulation& e, const GuestRange& mem) {
  const size_t width = e.decoded.width;
  if (e.memory_is(0)) {
    const uint64_t value = ValueOf(e, e.operand(1));
    Store(mem, e, e.state.recipe == Recipe::kByteSwapMove ? ByteSwap(value, width) : value);
    return true;
  }
  uint64_t value = Load(mem, e);
  const ZydisRegister dest = e.operand(0).reg.value;
  switch (e.state.recipe) {
    case Recipe::kByteSwapMove: value = ByteSwap(value, width); break;
    case Recipe::kExtend:
      if (e.insn().mnemonic != ZYDIS_MNEMONIC_MOVZX) value = SignExtend(value, width);
      break;
    case Recipe::kConditionalMove:
      // A false condition still writes a 32-bit destination (clearing bits 32..63).
      if (!ConditionHolds(e.insn().opcode, e.flags())) value = ReadGpr(*e.uc, dest);
      break;
    default: break;
  }
  WriteGpr(e.uc, dest, value);
  return true;
}

}  // namespace

bool ExecuteInteger(const Emulation& e) {
  GuestRange mem;
  if (!e.Resolve(&mem, e.decoded.address, e.decoded.width)) return false;
  if ((e.decoded.locked || e.state.recipe == Recipe::kCompareExchangeDouble) && !mem.contiguous()) {
    return false;  // an atomic operation needs one view
  }
  bool done = false;
  switch (e.state.recipe) {
    case Recipe::kAlu: done = ExecuteAlu(e, mem); break;
    case Recipe::kExchange: {
      const ZydisDecodedOperand& reg_op = e.operand(e.memory_is(0) ? 1 : 0);
      const uint64_t value = ReadGpr(*e.uc, reg_op.reg.value);
      const uint64_t old = AtomicExchange(mem.view(), e.decoded.width, value);
      e.NoteRead(old);
      e.NoteWrite(value);
      WriteGpr(e.uc, reg_op.reg.value, old);
      done = true;
      break;
    }
    case Recipe::kExchangeAdd: done = ExecuteExchangeAdd(e, mem); break;
    case Recipe::kCompareExchange: done = ExecuteCompareExchange(e, mem); break;
    case Recipe::kCompareExchangeDouble: done = ExecuteCompareExchangeDouble(e, mem); break;
    case Recipe::kSetCondition:
      Store(mem, e, ConditionHolds(e.insn().opcode, e.flags()) ? 1 : 0);
      done = true;
      break;
    case Recipe::kPush:
    case Recipe::kPop: done = ExecutePushPop(e, mem); break;
    default: done = ExecuteMoveFamily(e, mem); break;
  }
  if (done) e.AdvanceIp();
  return done;
}

}  // namespace udiag::mmio
