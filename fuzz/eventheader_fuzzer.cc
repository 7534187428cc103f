// Fuzzes the EventHeader decoder: a whole record (common header, event
// header, extensions, metadata, payload) as a producer may write it.
//
// Input: the record bytes.
#include <cstddef>
#include <cstdint>
#include <span>

#include "schema/eventheader.h"
#include "schema/field_values.h"

using namespace udiag::schema;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const EventHeaderEvent event = DecodeEventHeaderRecord(std::span<const uint8_t>(data, size));
  RenderEventHeaderText(event);
  const DecodedEvent decoded = ToDecodedEvent(event, "MyProvider_L5K1");
  RenderFieldsJson(decoded.values);
  RenderFieldsJson(decoded.meta);
  return 0;
}
