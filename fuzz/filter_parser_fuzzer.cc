// Fuzzes the event filter grammar (src/filter): compiling an expression
// against an event's fields, the error texts of a bad one, and matching a
// compiled filter against untrusted record bytes.
//
// Input: the event's field list (registration syntax), NUL, the filter
// text, NUL, then the record (common header + payload); its first byte is
// also the cpu.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "filter/filter.h"
#include "schema/event_description.h"

using namespace udiag;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t first = input.find('\0');
  if (first == std::string_view::npos) return 0;
  const size_t second = input.find('\0', first + 1);
  const std::string_view args = input.substr(0, first);
  const std::string_view text = input.substr(first + 1, second == std::string_view::npos ? second : second - first - 1);
  std::span<const uint8_t> record;
  if (second != std::string_view::npos) record = std::span<const uint8_t>(data + second + 1, size - second - 1);

  schema::EventDescription event;
  if (args.size() >= schema::kMaxCommandBytes || schema::ParseCommand("fuzz " + std::string(args), &event) != 0) {
    event.fields.clear();
  }
  if (text.size() > filter::kMaxFilterText) return 0;
  filter::Filter compiled;
  filter::ParseError error;
  if (filter::Compile(text, event.fields, &compiled, &error) != 0) {
    filter::ErrorFileText(text, error);
    filter::ErrorLogEntry(0, text, error);
    return 0;
  }
  const uint32_t cpu = record.empty() ? 0 : record[0];
  compiled.Matches({record, cpu, "fuzz-comm"});
  return 0;
}
