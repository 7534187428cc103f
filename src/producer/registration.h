// The daemon round trips behind the data-file ioctls, once their arguments
// have been checked: shared by the current ABI (udiag_api.cc) and the
// historic ones (legacy_abi.cc).
#pragma once

#include <cstdint>
#include <string>

#include "producer/client.h"

namespace udiag::producer {

struct Registration {
  uint32_t write_index = 0;
  uint32_t event_id = 0;
};

// Registers `command` on data file `fd` with the enabler (addr, bit, size),
// which the agent keeps equal to "event is traced" from now on. 0 or errno.
int RegisterEnabler(Client& client, int fd, uint16_t flags, const std::string& command, const LocalEnabler& enabler,
                    Registration* out);
// Stops maintaining (addr, bit) and clears it. 0 or errno (ENOENT: no such enabler).
int UnregisterEnabler(Client& client, uint64_t addr, uint8_t bit);
// DIAG_IOCSDEL of the event named `name`. 0 or errno.
int DeleteEvent(Client& client, const std::string& name);

}  // namespace udiag::producer
