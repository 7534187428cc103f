#include "service/trace_text.h"

#include <gtest/gtest.h>

#include "service/event_registry.h"

namespace udiag::service {
namespace {

TEST(TraceTextTest, HeaderMatchesFtrace) {
  std::string h = TraceFileHeader(3, 5, 2);
  EXPECT_EQ(h.substr(0, h.find('\n', 40)),
            "# tracer: nop\n#\n# entries-in-buffer/entries-written: 3/5   #P:2");
  EXPECT_NE(h.find("\n#                                _-----=> irqs-off/BH-disabled\n"), std::string::npos);
  EXPECT_NE(h.find("\n#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
                   "#              | |         |   |||||     |         |\n"),
            std::string::npos);
}

TEST(TraceTextTest, LineHasFtraceColumns) {
  Event event;
  event.id = 1000;
  event.tp_name = "test";
  ASSERT_EQ(schema::ParseCommand("test u32 count", &event.desc), 0);
  std::vector<uint8_t> record = {0xe8, 0x03, 0, 0, 0x39, 0x30, 0, 0, 5, 0, 0, 0};
  TraceEntry entry{{1'234'567'891'234, 12345, 12345, 1}, 0, record};
  EXPECT_EQ(TraceLine(entry, "app", &event),
            "             app-12345   [001] .....  1234.567891: test: count=0x5 (5)\n");
  // Rounded to the nearest microsecond, as ftrace and trace-cmd print it.
  entry.meta.timestamp = 1'234'567'891'500;
  EXPECT_EQ(TraceLine(entry, "app", &event),
            "             app-12345   [001] .....  1234.567892: test: count=0x5 (5)\n");
}

TEST(TraceTextTest, UnknownEventAndLostLine) {
  std::vector<uint8_t> record = {0xe9, 0x03, 0, 0, 1, 0, 0, 0};
  TraceEntry entry{{0, 1, 1, 0}, 0, record};
  EXPECT_NE(TraceLine(entry, "x", nullptr).find("Unknown type 1001"), std::string::npos);
  EXPECT_EQ(LostEventsLine(1, 42), "CPU:1 [LOST 42 EVENTS]\n");
}

}  // namespace
}  // namespace udiag::service
