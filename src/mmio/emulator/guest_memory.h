// The memory an emulated instruction touches, reached through the caller's alias function with
// the instruction's exact access widths (device registers have side effects: never read or write
// wider, narrower or more often than the CPU would).
#pragma once

#include <cstddef>
#include <cstdint>

#include "mmio/emulator/emulator.h"

namespace udiag::mmio {

// One resolved guest range (at most 64 bytes): a single alias view, or one per 4 KiB page.
class GuestRange {
 public:
  // Resolves [addr, addr+len) through `alias`; false if some byte has no view.
  bool Resolve(AliasFn alias, void* ctx, uintptr_t addr, size_t len);

  bool contiguous() const { return piece_count_ == 1; }
  // The single view (only when contiguous()); atomic operations need it.
  uint8_t* view() const { return pieces_[0].view; }

  // Reads/writes all `len` bytes: one access of exactly `len` bytes (1/2/4/8/16/32/64) when the
  // range is contiguous, else per page piece, each split into naturally sized 8/4/2/1-byte
  // accesses (what a page-crossing access does on the bus as well).
  void Read(uint8_t* out) const;
  void Write(const uint8_t* in) const;

 private:
  // Calls access(view, len, offset_in_range) for each single access Read/Write perform.
  template <typename Access>
  void ForEachAccess(Access access) const {
    if (piece_count_ == 1 && (pieces_[0].len & (pieces_[0].len - 1)) == 0) {
      return access(pieces_[0].view, pieces_[0].len, 0);
    }
    size_t offset = 0;
    for (int i = 0; i < piece_count_; ++i) {
      // Naturally aligned chunks, as wide as possible (at most 8 bytes).
      uint8_t* at = pieces_[i].view;
      for (size_t left = pieces_[i].len; left > 0;) {
        size_t chunk = 8;
        while (chunk > left || (reinterpret_cast<uintptr_t>(at) & (chunk - 1)) != 0) chunk /= 2;
        access(at, chunk, offset);
        at += chunk;
        offset += chunk;
        left -= chunk;
      }
    }
  }

  struct Piece {
    uint8_t* view;
    size_t len;
  };
  Piece pieces_[2];
  int piece_count_ = 0;
};

// Single accesses of exactly `len` bytes (1, 2, 4, 8, 16, 32 or 64) on a never-faulting view.
void LoadExact(const uint8_t* view, size_t len, uint8_t* out);
void StoreExact(uint8_t* view, size_t len, const uint8_t* in);

}  // namespace udiag::mmio
