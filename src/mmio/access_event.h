// One trapped instruction as the handlers see it: its memory access(es) in
// udiag_mmio_access form (two for MOVS: source read and destination write)
// and the probes each one overlaps. Fixed size, async-signal-safe.
#pragma once

#include <signal.h>
#include <sys/ucontext.h>

#include <cstddef>

#include "mmio/emulator/emulator.h"
#include "mmio/snapshot.h"
#include "udiag/mmio.h"

namespace udiag::mmio {

// Trivially constructible, so that it can live in initial-exec TLS; Describe() initializes it.
class AccessEvent {
 public:
  // An access overlapping more probes than this calls the first ones only.
  static constexpr size_t kMaxHits = 16;

  // Describes the faulting instruction; when it was not decoded, the access is
  // the fault address with the direction from the page-fault error code.
  void Describe(const Snapshot& snap, const DecodedInstruction& insn, DecodeStatus status,
                uintptr_t fault_addr, const ucontext_t& uc);
  void SetHow(udiag_mmio_how how);
  // The values an emulated instruction read/wrote (design B).
  void SetValues(const ExecuteResult& result);

  void RunPre(ucontext_t* uc) const;
  void RunPost() const;

 private:
  struct Hit {
    udiag_mmio_probe* probe;
    unsigned part;
  };
  void AddPart(const Snapshot& snap, const udiag_mmio_access& access);

  udiag_mmio_access parts_[2];
  size_t part_count_;
  Hit hits_[kMaxHits];
  size_t hit_count_;
};

}  // namespace udiag::mmio
