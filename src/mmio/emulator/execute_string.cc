// Execute for MOVS/STOS/LODS, with or without REP: one element per call. Under REP, RCX counts
// down and RIP stays on the instruction until RCX reaches zero, exactly the state the CPU leaves
// when it interrupts a REP string instruction; it resumes it, faulting again for each element
// that touches probed memory (one event per element, like mmiotrace) and running natively
// elsewhere.
#include "mmio/emulator/execute_internal.h"

namespace udiag::mmio {
namespace {

void Step(const Emulation& e, int greg_index, int64_t delta) {
  e.greg(greg_index) = static_cast<greg_t>(static_cast<uint64_t>(e.greg(greg_index)) + delta);
}

}  // namespace

bool ExecuteString(const Emulation& e) {
  const size_t width = e.decoded.width;
  const bool rep = e.state.rep;
  if (rep && e.greg(REG_RCX) == 0) {  // no iteration, no access
    e.AdvanceIp();
    return true;
  }
  const int64_t step = (e.flags() & kDirectionFlag) ? -static_cast<int64_t>(width)
                                                    : static_cast<int64_t>(width);
  GuestRange primary, destination;
  if (!e.Resolve(&primary, e.decoded.address, width)) return false;
  if (e.state.recipe == Recipe::kStringMove &&
      !e.Resolve(&destination, e.decoded.second_address, width)) {
    return false;
  }
  alignas(8) uint8_t element[8] = {};
  switch (e.state.recipe) {
    case Recipe::kStringMove:
      e.ReadRecorded(primary, element);
      e.WriteRecorded(destination, element);
      Step(e, REG_RSI, step);
      Step(e, REG_RDI, step);
      break;
    case Recipe::kStringStore: {
      const uint64_t value = ReadGpr(*e.uc, AccumulatorOfWidth(width));
      memcpy(element, &value, width);
      e.WriteRecorded(primary, element);
      Step(e, REG_RDI, step);
      break;
    }
    default: {  // LODS
      uint64_t value = 0;
      e.ReadRecorded(primary, element);
      memcpy(&value, element, width);
      WriteGpr(e.uc, AccumulatorOfWidth(width), value);
      Step(e, REG_RSI, step);
      break;
    }
  }
  if (rep) {
    Step(e, REG_RCX, -1);
    if (e.greg(REG_RCX) != 0) return true;
  }
  e.AdvanceIp();
  return true;
}

}  // namespace udiag::mmio
