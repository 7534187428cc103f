#include "service/event_probe.h"

// Before <sys/sdt.h>: the probe note then records the semaphore's address.
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include "schema/event_description.h"

extern "C" {
// In .probes, where tracers look for SDT semaphores.
unsigned short udiag_event_semaphore __attribute__((section(".probes"))) = 0;
}

namespace udiag::service {

void FireEventProbe(uint32_t id, const EntryMeta& meta, std::span<const uint8_t> record) {
  const uint8_t* payload = record.data() + schema::kCommonHeaderSize;
  uint32_t length = static_cast<uint32_t>(record.size() - schema::kCommonHeaderSize);
  STAP_PROBE6(udiag, event, id, payload, length, meta.pid, meta.tid, meta.timestamp);
}

}  // namespace udiag::service
