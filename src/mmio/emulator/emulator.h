// Decode-and-emulate of the x86-64 instruction that faulted on a probed page (kmmio design B,
// spec/kmmio.md §7–8): the instruction is never re-executed on the probed mapping; its memory
// accesses go to a never-protected alias view of the same memory, its register effects are written
// into the signal context.
//
// Everything here is async-signal-safe: no allocation, no locks, no stdio, errno preserved;
// all state is fixed-size and lives in the caller's objects.
//
// Supported (kmmio.md §8.1 tiers 0–3): MOV (incl. moffs, imm), MOVZX/MOVSX/MOVSXD, MOVNTI, MOVBE,
// PUSH/POP m, ADD/OR/ADC/SBB/AND/SUB/XOR/CMP/TEST, INC/DEC/NOT/NEG, shifts and rotates,
// BT/BTS/BTR/BTC, SETcc, CMOVcc, XCHG, XADD, CMPXCHG, CMPXCHG8B/16B (LOCK forms atomic on the
// alias), MOVS/STOS/LODS with or without REP, and the vector moves MOVD/MOVQ/MOVDQA/MOVDQU/
// MOV{A,U}P{S,D}/MOVSS/MOVSD/MOVNT{DQ,PS,PD,DQA} with their VEX forms, VPBROADCAST{B,W,D,Q} and
// the EVEX moves (512-bit, opmask) when the CPU and the signal frame carry AVX-512 state.
// Everything else decodes to kUnsupported; the caller then uses rebase-and-step (B') or design A.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sys/ucontext.h>

namespace udiag::mmio {

enum class DecodeStatus {
  kOk,
  kNoMemoryOperand,  // a valid instruction that touches no memory (cannot have faulted on a probe)
  kUnsupported,      // valid, but not emulated: use rebase-and-step or single-step instead
  kInvalid,          // the bytes at RIP do not decode
};

enum AccessDirection : uint8_t { kRead = 1, kWrite = 2, kReadWrite = 3 };

// Bytes of opaque decoder state (Zydis' instruction + operands) carried from Decode to Execute.
inline constexpr size_t kDecoderStateSize = 1280;

struct DecodedInstruction {
  uintptr_t ip;
  uint8_t length;
  uint8_t bytes[15];
  // The memory operand. For MOVS this is the source (read); the destination is `second_address`.
  // For BT/BTS/BTR/BTC with a register bit offset it is the addressed unit, not the base.
  // For REP string forms it describes one element (Execute performs one element per call).
  uintptr_t address;
  uint16_t width;      // bytes accessed at `address` (masked EVEX: the full vector width)
  uint8_t direction;   // AccessDirection
  bool locked;         // LOCK prefix, or implicitly locked (XCHG with memory)
  uintptr_t second_address;  // MOVS destination (written, same width); 0 for everything else
  // For rebase-and-step (B'): the registers forming `address` as gregs indices (REG_RAX…, see
  // <sys/ucontext.h>) or -1, and whether it is RIP-relative (then rebasing is impossible).
  int base_greg;
  int index_greg;
  uint8_t scale;
  int64_t displacement;
  bool rip_relative;
  alignas(16) unsigned char decoder_state[kDecoderStateSize];
};

// Decodes the instruction at the context's RIP (code is never probed: it is read directly) and
// computes its memory operand from the context's registers. kOk means Execute can emulate it.
DecodeStatus Decode(const ucontext_t& uc, DecodedInstruction* out);

// Maps `len` bytes at `addr` to the same bytes in a never-protected view, or nullptr if that range
// has no single contiguous view. Execute asks for the whole access first and, when that fails,
// once per piece that does not cross a 4 KiB page. It asks for every byte the instruction touches,
// including ordinary memory (the stack of PUSH/POP, the unprobed side of a page-crossing access):
// for memory that is not probed the function should return `addr` itself.
using AliasFn = uint8_t* (*)(void* ctx, uintptr_t addr, size_t len);

struct ExecuteResult {
  // Bytes read from / written to the memory operand(s), little-endian, `width` of them valid.
  // For CMPXCHG whose comparison failed, value_written holds the unchanged value the CPU writes back.
  alignas(64) uint8_t value_read[64];
  alignas(64) uint8_t value_written[64];
  bool did_read;
  bool did_write;
};

// Performs the instruction of a Decode that returned kOk (on the same context) as the CPU would:
// - memory through `alias` with the instruction's exact access widths (1/2/4/8-byte scalar
//   accesses, one 16/32/64-byte vector access); an access the alias serves in two pieces becomes
//   naturally aligned 8/4/2/1-byte accesses per piece, as on the bus;
// - LOCK and XCHG forms atomic on the alias: XCHG, CMPXCHG, CMPXCHG8B/16B as themselves, other
//   LOCK read-modify-writes as a read, then LOCK CMPXCHG retried until it succeeds;
// - general registers with the CPU's write-back rules, RFLAGS (status flags computed by the host
//   CPU running the same operation), vector registers in uc->uc_mcontext.fpregs (XMM in the
//   FXSAVE image, upper YMM/ZMM halves and opmasks in the XSAVE area behind it), and RIP;
// - REP string forms one element per call: RIP stays on the instruction while RCX is not zero
//   (the CPU resumes it, faulting again for the next probed element, running natively elsewhere).
// No #DB is raised for the emulated instruction even if the context has TF set (a debugger
// stepping through it sees it skipped). Non-temporal stores become ordinary stores.
// Returns false, with `uc` and memory untouched, when it cannot (alias missing for some byte, a
// locked access split across views, a misaligned CMPXCHG16B): then the caller falls back.
bool Execute(const DecodedInstruction& insn, ucontext_t* uc, AliasFn alias, void* ctx,
             ExecuteResult* result);

}  // namespace udiag::mmio
