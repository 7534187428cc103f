#include "mmio/emulator/host_ops.h"

#include "mmio/emulator/machine_context.h"

namespace udiag::mmio {
namespace {

// The operation runs between POPF and PUSHF. The stack pointer moves below the red zone first:
// the compiler may keep locals there, and PUSH would overwrite them.
// The source (or count) is in RCX so shifts can name CL.
#define UDIAG_FLAGS_OP(body)                                                          \
  asm volatile("lea -128(%%rsp), %%rsp\n\tpush %[fl]\n\tpopfq\n\t" body               \
               "\n\tpushfq\n\tpop %[fl]\n\tlea 128(%%rsp), %%rsp"                      \
               : [d] "+r"(dst), [fl] "+r"(flags)                                       \
               : [s] "c"(src)                                                          \
               : "cc", "memory")

#define UDIAG_BINARY(mnemonic)                                                             \
  switch (width) {                                                                         \
    case 1: UDIAG_FLAGS_OP(mnemonic "b %b[s], %b[d]"); break;              \
    case 2: UDIAG_FLAGS_OP(mnemonic "w %w[s], %w[d]"); break;              \
    case 4: UDIAG_FLAGS_OP(mnemonic "l %k[s], %k[d]"); break;              \
    default: UDIAG_FLAGS_OP(mnemonic "q %q[s], %q[d]"); break;             \
  }                                                                                        \
  break

#define UDIAG_UNARY(mnemonic)                                      \
  switch (width) {                                                 \
    case 1: UDIAG_FLAGS_OP(mnemonic "b %b[d]"); break;             \
    case 2: UDIAG_FLAGS_OP(mnemonic "w %w[d]"); break;             \
    case 4: UDIAG_FLAGS_OP(mnemonic "l %k[d]"); break;             \
    default: UDIAG_FLAGS_OP(mnemonic "q %q[d]"); break;            \
  }                                                                \
  break

#define UDIAG_SHIFT(mnemonic)                                                     \
  switch (width) {                                                                \
    case 1: UDIAG_FLAGS_OP(mnemonic "b %b[s], %b[d]"); break;          \
    case 2: UDIAG_FLAGS_OP(mnemonic "w %b[s], %w[d]"); break;          \
    case 4: UDIAG_FLAGS_OP(mnemonic "l %b[s], %k[d]"); break;          \
    default: UDIAG_FLAGS_OP(mnemonic "q %b[s], %q[d]"); break;         \
  }                                                                               \
  break

#define UDIAG_BIT(mnemonic)                                                            \
  switch (width) {                                                                     \
    case 2: UDIAG_FLAGS_OP(mnemonic "w %w[s], %w[d]"); break;          \
    case 4: UDIAG_FLAGS_OP(mnemonic "l %k[s], %k[d]"); break;          \
    default: UDIAG_FLAGS_OP(mnemonic "q %q[s], %q[d]"); break;         \
  }                                                                                    \
  break

uint64_t WidthMask(size_t width) { return width >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * width)) - 1; }

}  // namespace

bool AluOpIsReadOnly(AluOp op) {
  return op == AluOp::kCmp || op == AluOp::kTest || op == AluOp::kBt;
}

uint64_t HostAlu(AluOp op, size_t width, uint64_t dst, uint64_t src, uint64_t* flags_inout) {
  const uint64_t original = dst;
  uint64_t flags = (*flags_inout & kStatusFlags) | 0x2;  // bit 1 is always set in RFLAGS
  switch (op) {
    case AluOp::kAdd: UDIAG_BINARY("add");
    case AluOp::kOr: UDIAG_BINARY("or");
    case AluOp::kAdc: UDIAG_BINARY("adc");
    case AluOp::kSbb: UDIAG_BINARY("sbb");
    case AluOp::kAnd: UDIAG_BINARY("and");
    case AluOp::kSub: UDIAG_BINARY("sub");
    case AluOp::kXor: UDIAG_BINARY("xor");
    case AluOp::kCmp: UDIAG_BINARY("cmp");
    case AluOp::kTest: UDIAG_BINARY("test");
    case AluOp::kInc: UDIAG_UNARY("inc");
    case AluOp::kDec: UDIAG_UNARY("dec");
    case AluOp::kNot: UDIAG_UNARY("not");
    case AluOp::kNeg: UDIAG_UNARY("neg");
    case AluOp::kRol: UDIAG_SHIFT("rol");
    case AluOp::kRor: UDIAG_SHIFT("ror");
    case AluOp::kRcl: UDIAG_SHIFT("rcl");
    case AluOp::kRcr: UDIAG_SHIFT("rcr");
    case AluOp::kShl: UDIAG_SHIFT("shl");
    case AluOp::kShr: UDIAG_SHIFT("shr");
    case AluOp::kSar: UDIAG_SHIFT("sar");
    case AluOp::kBt: UDIAG_BIT("bt");
    case AluOp::kBts: UDIAG_BIT("bts");
    case AluOp::kBtr: UDIAG_BIT("btr");
    case AluOp::kBtc: UDIAG_BIT("btc");
  }
  *flags_inout = flags & kStatusFlags;
  return (AluOpIsReadOnly(op) ? original : dst) & WidthMask(width);
}

#define UDIAG_BY_WIDTH(width, body1, body2, body4, body8) \
  switch (width) {                                        \
    case 1: body1; break;                                 \
    case 2: body2; break;                                 \
    case 4: body4; break;                                 \
    default: body8; break;                                \
  }

uint64_t AtomicExchange(uint8_t* view, size_t width, uint64_t value) {
  UDIAG_BY_WIDTH(width,
                 asm volatile("xchgb %b0, (%1)" : "+q"(value) : "r"(view) : "memory"),
                 asm volatile("xchgw %w0, (%1)" : "+r"(value) : "r"(view) : "memory"),
                 asm volatile("xchgl %k0, (%1)" : "+r"(value) : "r"(view) : "memory"),
                 asm volatile("xchgq %q0, (%1)" : "+r"(value) : "r"(view) : "memory"));
  return value & WidthMask(width);
}

bool AtomicCompareExchange(uint8_t* view, size_t width, uint64_t expected, uint64_t desired,
                           uint64_t* observed) {
  uint64_t accumulator = expected;
  bool equal;
  UDIAG_BY_WIDTH(
      width,
      asm volatile("lock cmpxchgb %b2, (%3)" : "+a"(accumulator), "=@ccz"(equal) : "q"(desired), "r"(view) : "memory"),
      asm volatile("lock cmpxchgw %w2, (%3)" : "+a"(accumulator), "=@ccz"(equal) : "r"(desired), "r"(view) : "memory"),
      asm volatile("lock cmpxchgl %k2, (%3)" : "+a"(accumulator), "=@ccz"(equal) : "r"(desired), "r"(view) : "memory"),
      asm volatile("lock cmpxchgq %q2, (%3)" : "+a"(accumulator), "=@ccz"(equal) : "r"(desired), "r"(view) : "memory"));
  *observed = accumulator & WidthMask(width);
  return equal;
}

bool CompareExchangeDouble(uint8_t* view, size_t width, bool locked, uint64_t expected[2],
                           const uint64_t desired[2]) {
  bool equal;
  uint64_t lo = expected[0], hi = expected[1];
  if (width == 16) {
    if (locked) {
      asm volatile("lock cmpxchg16b (%[p])" : "+a"(lo), "+d"(hi), "=@ccz"(equal)
                   : "b"(desired[0]), "c"(desired[1]), [p] "r"(view) : "memory");
    } else {
      asm volatile("cmpxchg16b (%[p])" : "+a"(lo), "+d"(hi), "=@ccz"(equal)
                   : "b"(desired[0]), "c"(desired[1]), [p] "r"(view) : "memory");
    }
  } else if (locked) {
    asm volatile("lock cmpxchg8b (%[p])" : "+a"(lo), "+d"(hi), "=@ccz"(equal)
                 : "b"(desired[0]), "c"(desired[1]), [p] "r"(view) : "memory");
  } else {
    asm volatile("cmpxchg8b (%[p])" : "+a"(lo), "+d"(hi), "=@ccz"(equal)
                 : "b"(desired[0]), "c"(desired[1]), [p] "r"(view) : "memory");
  }
  expected[0] = lo;
  expected[1] = hi;
  return equal;
}

}  // namespace udiag::mmio
