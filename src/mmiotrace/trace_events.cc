#include "mmiotrace/trace_events.h"

#include <sys/uio.h>

#include <atomic>
#include <cerrno>

#include "udiag/udiag.h"

namespace udiag::mmiotrace {
namespace {

constexpr uint32_t kEnableBit = 31;

// user_events lays fields out back to back, without padding.
struct __attribute__((packed)) RwPayload {
  uint8_t op, width;
  int32_t map_id;
  uint64_t phys, value, pc;
  int32_t pid;
};

struct __attribute__((packed)) MapPayload {
  uint8_t op;
  int32_t map_id;
  uint64_t phys, virt, len;
  int32_t pid;
};

struct __attribute__((packed)) MarkHead {
  int32_t pid;
  uint32_t text_loc;  // __rel_loc: offset from the end of this word, size
};

}  // namespace

int TraceEvents::Register(Event* event, const char* name_args) {
  user_reg reg = {};
  reg.size = sizeof(reg);
  reg.enable_bit = kEnableBit;
  reg.enable_size = sizeof(event->enabled);
  reg.enable_addr = reinterpret_cast<uintptr_t>(&event->enabled);
  reg.name_args = reinterpret_cast<uintptr_t>(name_args);
  if (udiag_ioctl(fd_, DIAG_IOCSREG, &reg) != 0) return errno;
  event->write_index = reg.write_index;
  return 0;
}

int TraceEvents::Open() {
  fd_ = udiag_open();
  if (fd_ < 0) return errno;
  int err = Register(&rw_, "mmiotrace_rw u8 op; u8 width; s32 map_id; u64 phys; u64 value; u64 pc; s32 pid");
  if (!err) err = Register(&map_, "mmiotrace_map u8 op; s32 map_id; u64 phys; u64 virt; u64 len; s32 pid");
  if (!err) err = Register(&mark_, "mmiotrace_mark s32 pid; __rel_loc char[] text");
  if (err) {
    udiag_close(fd_);
    fd_ = -1;
  }
  return err;
}

void TraceEvents::EmitRecord(const Record& r) {
  bool is_map = r.kind == RecordKind::kMap || r.kind == RecordKind::kUnmap;
  Event& event = is_map ? map_ : rw_;
  // The daemon's agent thread flips the bit.
  if (!(std::atomic_ref(event.enabled).load(std::memory_order_relaxed) & (1u << kEnableBit))) return;
  uint8_t op = static_cast<uint8_t>(r.kind);
  if (is_map) {
    MapPayload payload{op, r.map_id, r.phys, r.value, r.len, r.pid};
    iovec iov[] = {{&event.write_index, sizeof(event.write_index)}, {&payload, sizeof(payload)}};
    udiag_writev(fd_, iov, 2);
    return;
  }
  uint64_t value = r.kind == RecordKind::kUnknown
                       ? (uint64_t{r.opcode[0]} << 16 | uint64_t{r.opcode[1]} << 8 | r.opcode[2])
                       : r.value;
  RwPayload payload{op, r.width, r.map_id, r.phys, value, r.pc, r.pid};
  iovec iov[] = {{&event.write_index, sizeof(event.write_index)}, {&payload, sizeof(payload)}};
  udiag_writev(fd_, iov, 2);
}

void TraceEvents::Emit(std::span<const Record> records) {
  if (fd_ < 0) return;
  for (const Record& record : records) EmitRecord(record);
}

void TraceEvents::EmitMark(int32_t pid, std::string_view text) {
  if (fd_ < 0 || !(std::atomic_ref(mark_.enabled).load(std::memory_order_relaxed) & (1u << kEnableBit))) return;
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  char nul = '\0';
  MarkHead head{pid, DYN_LOC(0u, static_cast<uint32_t>(text.size() + 1))};
  iovec iov[] = {{&mark_.write_index, sizeof(mark_.write_index)},
                 {&head, sizeof(head)},
                 {const_cast<char*>(text.data()), text.size()},
                 {&nul, 1}};
  udiag_writev(fd_, iov, 4);
}

}  // namespace udiag::mmiotrace
