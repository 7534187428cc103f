// Fuzzes the registration grammar (DIAG_IOCSREG commands, dynamic_events
// lines) and the texts derived from a parsed event, plus the rendering of a
// record of that event from untrusted bytes.
//
// Input: a command line, optionally followed by a NUL and record bytes.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "schema/event_description.h"
#include "schema/field_values.h"

using namespace udiag::schema;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view line = input.substr(0, nul);
  std::span<const uint8_t> record;
  if (nul != std::string_view::npos) record = std::span<const uint8_t>(data + nul + 1, size - nul - 1);

  DynamicEventsCommand dynamic;
  if (ParseDynamicEventsLine(line, &dynamic) == 0 && dynamic.op == DynamicEventsCommand::Op::kDelete) {
    EventDescription ignored;
    ParseCommand(dynamic.name + (dynamic.args.empty() ? "" : " " + dynamic.args), &ignored);
  }
  const std::string_view command =
      dynamic.op == DynamicEventsCommand::Op::kCreate ? std::string_view(dynamic.command) : line;
  EventDescription event;
  if (command.size() >= kMaxCommandBytes || ParseCommand(command, &event) != 0) return 0;

  DynamicEventsLine(event);
  FormatFile(event.name, 1000, event.fields);
  const std::string_view args = command.find(' ') == std::string_view::npos
                                    ? std::string_view()
                                    : command.substr(command.find(' ') + 1);
  FieldsMatch(event.fields, args);
  RenderTraceBody(event.name, event.fields, record);
  DecodedEvent decoded = DecodeFields(event.name, event.fields, record);
  RenderValuesText(decoded.values);
  RenderFieldsJson(decoded.values);
  return 0;
}
