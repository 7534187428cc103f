#include "service/trace_text.h"

#include <fmt/format.h>

#include <cstring>

#include "schema/timestamp_text.h"
#include "service/event_registry.h"
#include "trigger/synth_event.h"

namespace udiag::service {

std::string TraceFileHeader(uint64_t entries, uint64_t written, int online_cpus) {
  // The legend for irq-info without the TGID column, as in kernels >= 5.15.
  return fmt::format(
      "# tracer: nop\n"
      "#\n"
      "# entries-in-buffer/entries-written: {}/{}   #P:{}\n"
      "#\n"
      "#                                _-----=> irqs-off/BH-disabled\n"
      "#                               / _----=> need-resched\n"
      "#                              | / _---=> hardirq/softirq\n"
      "#                              || / _--=> preempt-depth\n"
      "#                              ||| / _-=> migrate-disable\n"
      "#                              |||| /     delay\n"
      "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
      "#              | |         |   |||||     |         |\n",
      entries, written, online_cpus);
}

std::string LostEventsLine(int cpu, uint64_t lost) {
  return fmt::format("CPU:{} [LOST {} EVENTS]\n", cpu, lost);
}

std::string TraceLine(const TraceEntry& entry, std::string_view comm, const Event* event) {
  schema::SecondsMicros t = schema::RoundToMicros(entry.meta.timestamp);
  std::string line = fmt::format("{:>16}-{:<7} [{:03}] ..... {:5}.{:06}: ", comm, entry.meta.tid,
                                 entry.meta.cpu, t.seconds, t.micros);
  if (event && event->synthetic) {
    line += event->tp_name + ": " + trigger::RenderSynthFields(event->desc.fields, entry.record);
  } else if (event) {
    line += schema::RenderTraceBody(event->tp_name, event->desc.fields, entry.record);
  } else {
    uint16_t type = 0;
    if (entry.record.size() >= sizeof(type)) std::memcpy(&type, entry.record.data(), sizeof(type));
    line += fmt::format("Unknown type {}", type);
  }
  line += '\n';
  return line;
}

}  // namespace udiag::service
