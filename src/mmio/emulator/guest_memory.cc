#include "mmio/emulator/guest_memory.h"

#include <cstring>

namespace udiag::mmio {
namespace {

constexpr uintptr_t kPageSize = 4096;

template <typename T>
T LoadScalar(const uint8_t* view) {
  T value;
  // One mov of sizeof(T) bytes; inline asm so the compiler neither merges, splits nor
  // instruments it, and misaligned views are fine.
  asm volatile("mov %1, %0" : "=r"(value) : "m"(*reinterpret_cast<const T*>(view)));
  return value;
}

template <typename T>
void StoreScalar(uint8_t* view, T value) {
  asm volatile("mov %1, %0" : "=m"(*reinterpret_cast<T*>(view)) : "r"(value));
}

}  // namespace

void LoadExact(const uint8_t* view, size_t len, uint8_t* out) {
  switch (len) {
    case 1: { uint8_t v = LoadScalar<uint8_t>(view); memcpy(out, &v, 1); break; }
    case 2: { uint16_t v = LoadScalar<uint16_t>(view); memcpy(out, &v, 2); break; }
    case 4: { uint32_t v = LoadScalar<uint32_t>(view); memcpy(out, &v, 4); break; }
    case 8: { uint64_t v = LoadScalar<uint64_t>(view); memcpy(out, &v, 8); break; }
    case 16:
      asm volatile("movdqu (%0), %%xmm0\n\tmovdqu %%xmm0, (%1)" : : "r"(view), "r"(out)
                   : "xmm0", "memory");
      break;
    case 32:
      asm volatile("vmovdqu (%0), %%ymm0\n\tvmovdqu %%ymm0, (%1)\n\tvzeroupper" : : "r"(view),
                   "r"(out) : "xmm0", "memory");
      break;
    case 64:
      asm volatile("vmovdqu64 (%0), %%zmm0\n\tvmovdqu64 %%zmm0, (%1)\n\tvzeroupper" : : "r"(view),
                   "r"(out) : "xmm0", "memory");
      break;
  }
}

void StoreExact(uint8_t* view, size_t len, const uint8_t* in) {
  uint64_t v = 0;
  memcpy(&v, in, len < 8 ? len : 8);
  switch (len) {
    case 1: StoreScalar<uint8_t>(view, static_cast<uint8_t>(v)); break;
    case 2: StoreScalar<uint16_t>(view, static_cast<uint16_t>(v)); break;
    case 4: StoreScalar<uint32_t>(view, static_cast<uint32_t>(v)); break;
    case 8: StoreScalar<uint64_t>(view, v); break;
    case 16:
      asm volatile("movdqu (%1), %%xmm0\n\tmovdqu %%xmm0, (%0)" : : "r"(view), "r"(in)
                   : "xmm0", "memory");
      break;
    case 32:
      asm volatile("vmovdqu (%1), %%ymm0\n\tvmovdqu %%ymm0, (%0)\n\tvzeroupper" : : "r"(view),
                   "r"(in) : "xmm0", "memory");
      break;
    case 64:
      asm volatile("vmovdqu64 (%1), %%zmm0\n\tvmovdqu64 %%zmm0, (%0)\n\tvzeroupper" : : "r"(view),
                   "r"(in) : "xmm0", "memory");
      break;
  }
}

bool GuestRange::Resolve(AliasFn alias, void* ctx, uintptr_t addr, size_t len) {
  piece_count_ = 0;
  if (uint8_t* whole = alias(ctx, addr, len)) {
    pieces_[piece_count_++] = {whole, len};
    return true;
  }
  const uintptr_t page_end = (addr | (kPageSize - 1)) + 1;
  if (addr + len <= page_end) return false;  // one page, no view
  const size_t first = page_end - addr;
  uint8_t* head = alias(ctx, addr, first);
  uint8_t* tail = alias(ctx, page_end, len - first);
  if (head == nullptr || tail == nullptr) return false;
  pieces_[piece_count_++] = {head, first};
  pieces_[piece_count_++] = {tail, len - first};
  return true;
}

void GuestRange::Read(uint8_t* out) const {
  ForEachAccess([out](uint8_t* view, size_t len, size_t offset) { LoadExact(view, len, out + offset); });
}

void GuestRange::Write(const uint8_t* in) const {
  ForEachAccess([in](uint8_t* view, size_t len, size_t offset) { StoreExact(view, len, in + offset); });
}

}  // namespace udiag::mmio
