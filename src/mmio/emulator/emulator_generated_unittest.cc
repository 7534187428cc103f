// Randomly generated integer instructions (Zydis encoder): every ALU, shift, bit, exchange and
// move form on memory, with 8/16/32/64-bit operands, random registers (AH..BH, SIL/DIL, R8–R15),
// random base/index/scale/displacement addressing, LOCK where allowed and page-crossing
// operands, each run natively and under emulation from the same random state.
#include <Zydis/Zydis.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "mmio/emulator/emulator_test_expect.h"
#include "mmio/emulator/emulator_test_harness.h"

namespace udiag::mmio::testing {
namespace {

enum class Form { kMemReg, kRegMem, kMemImm, kMem, kMemCl, kMemOne };

struct Op {
  ZydisMnemonic mnemonic;
  std::vector<Form> forms;
  bool lockable;
  bool bit_op;  // BT*: no byte form, register offsets address a bit string
};

const std::vector<Op>& Ops() {
  static const std::vector<Op> ops = [] {
    const std::vector<Form> binary = {Form::kMemReg, Form::kRegMem, Form::kMemImm};
    const std::vector<Form> shift = {Form::kMemCl, Form::kMemOne, Form::kMemImm};
    std::vector<Op> list;
    for (auto m : {ZYDIS_MNEMONIC_ADD, ZYDIS_MNEMONIC_OR, ZYDIS_MNEMONIC_ADC, ZYDIS_MNEMONIC_SBB,
                   ZYDIS_MNEMONIC_AND, ZYDIS_MNEMONIC_SUB, ZYDIS_MNEMONIC_XOR}) {
      list.push_back({m, binary, true, false});
    }
    list.push_back({ZYDIS_MNEMONIC_CMP, binary, false, false});
    list.push_back({ZYDIS_MNEMONIC_TEST, {Form::kMemReg, Form::kMemImm}, false, false});
    list.push_back({ZYDIS_MNEMONIC_MOV, binary, false, false});
    for (auto m : {ZYDIS_MNEMONIC_INC, ZYDIS_MNEMONIC_DEC, ZYDIS_MNEMONIC_NOT, ZYDIS_MNEMONIC_NEG}) {
      list.push_back({m, {Form::kMem}, true, false});
    }
    for (auto m : {ZYDIS_MNEMONIC_ROL, ZYDIS_MNEMONIC_ROR, ZYDIS_MNEMONIC_RCL, ZYDIS_MNEMONIC_RCR,
                   ZYDIS_MNEMONIC_SHL, ZYDIS_MNEMONIC_SHR, ZYDIS_MNEMONIC_SAR}) {
      list.push_back({m, shift, false, false});
    }
    list.push_back({ZYDIS_MNEMONIC_BT, {Form::kMemReg, Form::kMemImm}, false, true});
    for (auto m : {ZYDIS_MNEMONIC_BTS, ZYDIS_MNEMONIC_BTR, ZYDIS_MNEMONIC_BTC}) {
      list.push_back({m, {Form::kMemReg, Form::kMemImm}, true, true});
    }
    for (auto m : {ZYDIS_MNEMONIC_XCHG, ZYDIS_MNEMONIC_XADD, ZYDIS_MNEMONIC_CMPXCHG}) {
      list.push_back({m, {Form::kMemReg}, m != ZYDIS_MNEMONIC_XCHG, false});
    }
    return list;
  }();
  return ops;
}

constexpr size_t kRegion = Harness::kPages * Harness::kPageSize;
constexpr int kRspId = 4;

ZydisRegister Gpr(size_t width, int id) {
  switch (width) {
    case 1: return static_cast<ZydisRegister>(id < 4 ? ZYDIS_REGISTER_AL + id
                                                     : ZYDIS_REGISTER_SPL + (id - 4));
    case 2: return static_cast<ZydisRegister>(ZYDIS_REGISTER_AX + id);
    case 4: return static_cast<ZydisRegister>(ZYDIS_REGISTER_EAX + id);
    default: return static_cast<ZydisRegister>(ZYDIS_REGISTER_RAX + id);
  }
}

struct Generated {
  std::vector<uint8_t> code;
  Machine machine;
  std::vector<uint8_t> memory;
  std::string description;
};

// One random instruction with its machine state, or false if the encoder rejects the combination
// (e.g. AH together with a REX-only register).
bool Generate(std::mt19937_64& rng, uintptr_t view, uintptr_t stack_top, Generated* out) {
  const Op& op = Ops()[rng() % Ops().size()];
  const Form form = op.forms[rng() % op.forms.size()];
  static constexpr size_t kWidths[] = {1, 2, 4, 8};
  const size_t width = op.bit_op ? kWidths[1 + rng() % 3] : kWidths[rng() % 4];

  auto pick_id = [&](std::initializer_list<int> taken) {
    for (;;) {
      const int id = static_cast<int>(rng() % 16);
      bool free = id != kRspId;
      for (int t : taken) free = free && id != t;
      if (free) return id;
    }
  };
  const bool cmpxchg = op.mnemonic == ZYDIS_MNEMONIC_CMPXCHG;
  const int base = pick_id({cmpxchg ? 0 : -1, form == Form::kMemCl ? 1 : -1});
  const bool has_index = rng() % 2;
  const int index = has_index ? pick_id({base, cmpxchg ? 0 : -1, form == Form::kMemCl ? 1 : -1}) : -1;
  // Byte registers: ids 4..7 are AH..BH one time in two, else SPL..DIL.
  int reg_id = pick_id({base, index});
  const bool high_byte = width == 1 && reg_id >= 4 && reg_id < 8 && rng() % 2;

  ZydisEncoderRequest req;
  memset(&req, 0, sizeof(req));
  req.machine_mode = ZYDIS_MACHINE_MODE_LONG_64;
  req.mnemonic = op.mnemonic;
  const bool memory_destination = form != Form::kRegMem;
  if (op.lockable && memory_destination && rng() % 2) req.prefixes = ZYDIS_ATTRIB_HAS_LOCK;

  ZydisEncoderOperand mem{};
  mem.type = ZYDIS_OPERAND_TYPE_MEMORY;
  mem.mem.base = Gpr(8, base);
  mem.mem.index = has_index ? Gpr(8, index) : ZYDIS_REGISTER_NONE;
  mem.mem.scale = has_index ? static_cast<uint8_t>(1u << (rng() % 4)) : 0;
  mem.mem.displacement = static_cast<int64_t>(rng() % 128);
  mem.mem.size = static_cast<uint16_t>(width);

  ZydisEncoderOperand other{};
  ZydisRegister reg = high_byte ? static_cast<ZydisRegister>(ZYDIS_REGISTER_AH + (reg_id - 4))
                                : Gpr(width, reg_id);
  switch (form) {
    case Form::kMemReg:
    case Form::kRegMem:
      other.type = ZYDIS_OPERAND_TYPE_REGISTER;
      other.reg.value = reg;
      break;
    case Form::kMemImm:
      other.type = ZYDIS_OPERAND_TYPE_IMMEDIATE;
      if (op.bit_op || (op.forms.size() == 3 && op.forms[0] == Form::kMemCl)) {
        other.imm.u = rng() % 256;  // bit offset or shift count: imm8
      } else if (width == 1) {
        other.imm.u = rng() % 256;
      } else {
        other.imm.s = rng() % 2 ? static_cast<int8_t>(rng()) : static_cast<int32_t>(rng());
        if (width == 2) other.imm.s = static_cast<int16_t>(other.imm.s);
      }
      break;
    case Form::kMemCl:
      other.type = ZYDIS_OPERAND_TYPE_REGISTER;
      other.reg.value = ZYDIS_REGISTER_CL;
      break;
    case Form::kMemOne:
      other.type = ZYDIS_OPERAND_TYPE_IMMEDIATE;
      other.imm.u = 1;
      break;
    case Form::kMem: break;
  }
  if (form == Form::kRegMem) {
    req.operands[0] = other;
    req.operands[1] = mem;
  } else {
    req.operands[0] = mem;
    req.operands[1] = other;
  }
  req.operand_count = form == Form::kMem ? 1 : 2;

  uint8_t bytes[ZYDIS_MAX_INSTRUCTION_LENGTH];
  ZyanUSize length = sizeof(bytes);
  if (!ZYAN_SUCCESS(ZydisEncoderEncodeInstruction(&req, bytes, &length))) return false;
  out->code.assign(bytes, bytes + length);

  // State: random, then the address registers aimed at a target offset that is sometimes just
  // before the page boundary (a crossing operand).
  out->machine = RandomMachine(rng());
  out->machine.gpr[kRsp] = stack_top;
  out->memory = RandomBytes(rng(), kRegion + Harness::kStackSize);
  const bool register_bit_offset = op.bit_op && form == Form::kMemReg;
  size_t target = 100 + rng() % (kRegion - 300);
  if (rng() % 4 == 0) target = Harness::kPageSize - 1 - rng() % width;
  const uint64_t index_value = has_index ? rng() % 8 : 0;
  if (has_index) out->machine.gpr[index] = index_value;
  out->machine.gpr[base] = view + target - index_value * mem.mem.scale - mem.mem.displacement;
  if (register_bit_offset) {  // a bit offset within ±64 bytes of the operand
    out->machine.gpr[reg_id] = static_cast<uint64_t>(static_cast<int64_t>(rng() % 1024) - 512);
  }
  if (cmpxchg && rng() % 2) memcpy(&out->machine.gpr[0], &out->memory[target], width);
  out->description = std::string(ZydisMnemonicGetString(op.mnemonic)) + " width " +
                     std::to_string(width) + " at +" + std::to_string(target) + " bytes";
  for (uint8_t b : out->code) {
    static const char* kHex = "0123456789abcdef";
    out->description += std::string(" ") + kHex[b >> 4] + kHex[b & 15];
  }
  return true;
}

TEST(EmulatorGeneratedTest, RandomIntegerFormsMatchNativeExecution) {
  if (!CpuHasAvx512()) GTEST_SKIP() << "the test machine loads ZMM/opmask state: needs AVX-512";
  Harness harness;
  const auto view = reinterpret_cast<uintptr_t>(harness.view());
  std::mt19937_64 rng(20261122);
  constexpr int kInstructions = 1500;
  int generated = 0, crossing = 0;
  for (int attempt = 0; generated < kInstructions && attempt < 4 * kInstructions; ++attempt) {
    Generated g;
    if (!Generate(rng, view, harness.stack_top(), &g)) continue;
    ++generated;
    SCOPED_TRACE(g.description);
    const Harness::Outcome native = harness.Run(g.code, g.machine, g.memory, false);
    const Harness::Outcome emulated = harness.Run(g.code, g.machine, g.memory, true);
    ASSERT_EQ(native.fault.faults, 0);
    ASSERT_EQ(emulated.fault.faults, 1);
    const DecodedInstruction& decoded = emulated.fault.decoded;
    const bool crosses = decoded.address / Harness::kPageSize !=
                         (decoded.address + decoded.width - 1) / Harness::kPageSize;
    crossing += crosses;
    // A locked access split across two views cannot be atomic: Execute refuses it and the
    // harness lets it run natively (the caller's fallback).
    const int expected_failures = decoded.locked && crosses ? 1 : 0;
    ASSERT_EQ(emulated.fault.failures, expected_failures) << "decode status " << int(emulated.fault.status);
    ExpectSameState(native, emulated);
    if (HasFailure()) break;
  }
  EXPECT_EQ(generated, kInstructions);
  EXPECT_GT(crossing, kInstructions / 20);  // the page-split path was exercised
}

}  // namespace
}  // namespace udiag::mmio::testing
