#include "schema/event_description.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace udiag::schema {
namespace {

using Op = DynamicEventsCommand::Op;

DynamicEventsCommand ParseLine(std::string_view line) {
  DynamicEventsCommand command;
  EXPECT_EQ(ParseDynamicEventsLine(line, &command), 0) << line;
  return command;
}

void ExpectCreate(std::string_view line, std::string_view registration) {
  DynamicEventsCommand command = ParseLine(line);
  EXPECT_EQ(command.op, Op::kCreate) << line;
  EXPECT_EQ(command.command, registration) << line;
}

void ExpectDelete(std::string_view line, std::string_view system, std::string_view name,
                  std::string_view args) {
  DynamicEventsCommand command = ParseLine(line);
  EXPECT_EQ(command.op, Op::kDelete) << line;
  EXPECT_EQ(command.system, system) << line;
  EXPECT_EQ(command.name, name) << line;
  EXPECT_EQ(command.args, args) << line;
}

void ExpectOp(std::string_view line, Op op) { EXPECT_EQ(ParseLine(line).op, op) << line; }

void ExpectMalformed(std::string_view line) {
  DynamicEventsCommand command;
  EXPECT_EQ(ParseDynamicEventsLine(line, &command), EINVAL) << line;
}

TEST(DynamicEventsLineParseTest, Create) {
  ExpectCreate("u:__test_event u32 field1; u32 field2", "__test_event u32 field1; u32 field2");
  ExpectCreate("u:noargs", "noargs");
  ExpectCreate("u:   test u32 a", "test u32 a");
  ExpectCreate("u:\ttest u32 a", "test u32 a");
}

TEST(DynamicEventsLineParseTest, CreateToleratesSurroundingWhitespace) {
  ExpectCreate("u:test u32 a\n", "test u32 a");
  ExpectCreate("  u:test  u32 a;\t \n", "test  u32 a;");
}

TEST(DynamicEventsLineParseTest, CreateWithEmptyCommand) {
  // Rejected later, by ParseCommand.
  ExpectCreate("u:", "");
  ExpectCreate("u:  ", "");
}

TEST(DynamicEventsLineParseTest, DeleteByName) {
  ExpectDelete("-:__test_event", "", "__test_event", "");
  ExpectDelete("-:test u32 a; u32 b", "", "test", "u32 a; u32 b");
  ExpectDelete("-:test\tu32 a\n", "", "test", "u32 a");
}

TEST(DynamicEventsLineParseTest, DeleteWithSystem) {
  ExpectDelete("-:user_events/test", "user_events", "test", "");
  ExpectDelete("-:user_events_multi/test u64 value", "user_events_multi", "test", "u64 value");
  ExpectDelete("-:a/b/c", "a", "b/c", "");
}

TEST(DynamicEventsLineParseTest, DeleteWithBang) {
  ExpectDelete("!u:test u32 a", "", "test", "u32 a");
  ExpectDelete("!:test", "", "test", "");
  ExpectDelete("!p:sys/test", "sys", "test", "");
  ExpectDelete("!u:a:b", "", "a:b", "");  // only the first ':' counts
}

TEST(DynamicEventsLineParseTest, MalformedDeletes) {
  ExpectMalformed("-x");
  ExpectMalformed("-");
  ExpectMalformed("- :test");
  ExpectMalformed("-test");
  ExpectMalformed("!test");
  ExpectMalformed("!test u:x");  // the ':' must be in the first word
  ExpectMalformed("-:");
  ExpectMalformed("-: u32 a");
  ExpectMalformed("!u:");
  ExpectMalformed("-:user_events/");
  ExpectMalformed("-:/test");
}

TEST(DynamicEventsLineParseTest, FailureLeavesOutputAlone) {
  DynamicEventsCommand command = ParseLine("u:keep");
  EXPECT_EQ(ParseDynamicEventsLine("-x", &command), EINVAL);
  EXPECT_EQ(command.op, Op::kCreate);
  EXPECT_EQ(command.command, "keep");
}

TEST(DynamicEventsLineParseTest, BlankAndCommentLines) {
  ExpectOp("", Op::kNone);
  ExpectOp("\n", Op::kNone);
  ExpectOp(" \t ", Op::kNone);
  ExpectOp("# u:test", Op::kNone);
  ExpectOp("  # comment", Op::kNone);
}

TEST(DynamicEventsLineParseTest, CommentEndsTheLine) {
  ExpectCreate("u:test u32 a # the event", "test u32 a");
  ExpectDelete("-:test # gone", "", "test", "");
}

TEST(DynamicEventsLineParseTest, ResetsPreviousContents) {
  DynamicEventsCommand command = ParseLine("-:sys/test u32 a");
  ASSERT_EQ(ParseDynamicEventsLine("# nothing", &command), 0);
  EXPECT_EQ(command.op, Op::kNone);
  EXPECT_EQ(command.system, "");
  EXPECT_EQ(command.name, "");
  EXPECT_EQ(command.args, "");
}

TEST(DynamicEventsLineParseTest, OtherProvidersAreForeign) {
  ExpectOp("p:myprobe do_sys_open", Op::kForeign);
  ExpectOp("r:myretprobe do_sys_open $retval", Op::kForeign);
  ExpectOp("s:synth u64 lat", Op::kForeign);
  ExpectOp("e:eprobe sched/sched_switch", Op::kForeign);
  ExpectOp("U:test", Op::kForeign);
  ExpectOp("user:test", Op::kForeign);
}

}  // namespace
}  // namespace udiag::schema
