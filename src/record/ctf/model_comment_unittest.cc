// The model comment: exact texts survive, bad comments are refused.

#include "record/ctf/model_comment.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace udiag::record::ctf {
namespace {

TraceModel SmallModel() {
  TraceModel model;
  model.uuid[0] = 0xab;
  model.info.cpus = 4;
  model.info.hostname = "";
  schema::Field field{"__rel_loc char[]", "m*/%", schema::FieldKind::kRelLoc, 8, 4, true, true};
  model.types.push_back(EventType{9, "user_events", "a b\n\xff", {field}});
  model.tasks.push_back(Task{1, 2, "tab\tand \"quote\""});
  return model;
}

TEST(ModelCommentTest, KeepsEveryByteOfEveryText) {
  TraceModel model = SmallModel();
  std::string comment = ModelComment(model);
  EXPECT_EQ(comment.find("*/"), comment.size() - 3) << comment;  // only the closing one
  TraceModel parsed;
  ASSERT_EQ(ParseModelComment("/* CTF 1.8 */\n" + comment, &parsed), 0);
  EXPECT_EQ(parsed.uuid, model.uuid);
  EXPECT_EQ(parsed.info.cpus, 4u);
  EXPECT_EQ(parsed.info.hostname, "");
  ASSERT_EQ(parsed.types.size(), 1u);
  EXPECT_EQ(parsed.types[0].name, "a b\n\xff");
  ASSERT_EQ(parsed.types[0].fields.size(), 1u);
  EXPECT_EQ(parsed.types[0].fields[0].name, "m*/%");
  EXPECT_EQ(parsed.types[0].fields[0].kind, schema::FieldKind::kRelLoc);
  ASSERT_EQ(parsed.tasks.size(), 1u);
  EXPECT_EQ(parsed.tasks[0].comm, "tab\tand \"quote\"");
}

TEST(ModelCommentTest, RefusesWhatTheReaderCouldNotRebuild) {
  auto parse = [](TraceModel model) {
    TraceModel parsed;
    return ParseModelComment(ModelComment(model), &parsed);
  };
  TraceModel model = SmallModel();
  EXPECT_EQ(parse(model), 0);
  TraceModel duplicate_id = model;
  duplicate_id.types.push_back(model.types[0]);
  EXPECT_EQ(parse(duplicate_id), EINVAL);
  TraceModel wide_loc = model;
  wide_loc.types[0].fields[0].size = 8;
  EXPECT_EQ(parse(wide_loc), EINVAL);
  TraceModel huge_field = model;
  huge_field.types[0].fields[0].kind = schema::FieldKind::kStruct;
  huge_field.types[0].fields[0].size = kMaxRecordSize;
  EXPECT_EQ(parse(huge_field), EINVAL);
  TraceModel parsed;
  EXPECT_EQ(ParseModelComment("/* udiag-model 1\nuuid 00\n*/\n", &parsed), EINVAL);
  EXPECT_EQ(ParseModelComment("no comment", &parsed), EINVAL);
}

}  // namespace
}  // namespace udiag::record::ctf
