// Reads every record and every listed attribute of a trace reader, so that
// the sanitizers see each byte the reader hands out.
#pragma once

#include <cstdint>

#include "record/trace_model.h"

namespace udiag::fuzz {

inline uint64_t DrainTraceReader(record::TraceReader& reader) {
  uint64_t checksum = reader.info().lost_at_end + reader.event_types().size() + reader.tasks().size();
  record::Record record;
  while (reader.Next(&record)) {
    for (uint8_t byte : record.data) checksum += byte;
  }
  return checksum;
}

}  // namespace udiag::fuzz
