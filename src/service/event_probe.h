// udiagd's USDT probe `udiag:event`, which eBPF programs (bpftrace through
// `udiag bpftrace`) attach to. It fires once for each validated record of an
// event that a probe instance (instances/<name>/usdt_probe = 1) enables, with
//   arg0 event id, arg1 payload address (after the 8-byte common header),
//   arg2 payload length, arg3 pid, arg4 tid, arg5 timestamp (CLOCK_MONOTONIC ns).
// A semaphore guards it: the tracer (the kernel, for uprobes with a reference
// counter) raises it while attached, so an unattached probe costs one load.
#pragma once

#include <cstdint>
#include <span>

#include "service/trace_buffer.h"

// Named as <sys/sdt.h> expects (provider_name_semaphore); C linkage so the
// probe note can name it.
extern "C" unsigned short udiag_event_semaphore;

namespace udiag::service {

inline bool EventProbeAttached() { return __atomic_load_n(&udiag_event_semaphore, __ATOMIC_RELAXED) != 0; }

// Fires the probe for `record` (common header + payload) of event `id`.
void FireEventProbe(uint32_t id, const EntryMeta& meta, std::span<const uint8_t> record);

}  // namespace udiag::service
