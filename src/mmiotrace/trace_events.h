// The mmiotrace event set in udiagd: every logged line can also be a user
// event, so `udiag trace -e 'mmiotrace_*'` or a recording sees the accesses.
//   mmiotrace_rw   u8 op; u8 width; s32 map_id; u64 phys; u64 value; u64 pc; s32 pid
//   mmiotrace_map  u8 op; s32 map_id; u64 phys; u64 virt; u64 len; s32 pid
//   mmiotrace_mark s32 pid; __rel_loc char[] text
// `op` is the kernel's mm_io_opcode (1 R, 2 W, 3 MAP, 4 UNMAP, 5 UNKNOWN;
// an UNKNOWN's value holds its three opcode bytes, first byte highest).
// Written only while enabled; never from a signal handler.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "mmiotrace/record.h"

namespace udiag::mmiotrace {

class TraceEvents {
 public:
  // Opens a data file on the daemon of $UDIAG_DIR and registers the set.
  // 0, or the errno of udiag_open/DIAG_IOCSREG (ENOENT: no daemon); the
  // Emit calls then do nothing.
  int Open();

  void Emit(std::span<const Record> records);
  void EmitMark(int32_t pid, std::string_view text);

 private:
  struct Event {
    uint32_t enabled = 0;  // bit 31 follows "someone traces it"
    uint32_t write_index = 0;
  };
  int Register(Event* event, const char* name_args);
  void EmitRecord(const Record& record);

  int fd_ = -1;
  Event rw_, map_, mark_;
};

}  // namespace udiag::mmiotrace
