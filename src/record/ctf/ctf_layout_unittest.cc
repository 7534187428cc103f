// Event and field names as TSDL shows them.

#include "record/ctf/ctf_layout.h"

#include <gtest/gtest.h>

namespace udiag::record::ctf {
namespace {

schema::Field IntegerField(std::string name) {
  schema::Field field;
  field.type = "u32";
  field.name = std::move(name);
  field.size = 4;
  return field;
}

TEST(CtfLayoutTest, FieldNamesBecomeUniqueIdentifiers) {
  EventType type{1, "user_events", "e", {}};
  for (const char* name : {"count", "_count", "string", "a-b", "9lives", "", "dup", "dup", "__"}) {
    type.fields.push_back(IntegerField(name));
  }
  std::vector<CtfEventLayout> layouts = LayoutEvents({type});
  ASSERT_EQ(layouts.size(), 1u);
  std::vector<std::string> names;
  for (const CtfField& field : layouts[0].fields) names.push_back(field.name);
  EXPECT_EQ(names, (std::vector<std::string>{"count", "count_2", "_string", "a_b", "f9lives", "f", "dup",
                                             "dup_2", "f_2"}));
}

TEST(CtfLayoutTest, DynamicByteArraysGetALengthField) {
  schema::Field blob{"__data_loc u8[]", "blob", schema::FieldKind::kDataLoc, 8, 4, true, false};
  schema::Field text{"__rel_loc char[]", "text", schema::FieldKind::kRelLoc, 12, 4, true, true};
  std::vector<CtfEventLayout> layouts = LayoutEvents({EventType{1, "s", "e", {blob, text}}});
  EXPECT_EQ(layouts[0].fields[0].kind, CtfFieldKind::kDynByteArray);
  EXPECT_EQ(layouts[0].fields[0].length_name, "blob_length");
  EXPECT_EQ(layouts[0].fields[1].kind, CtfFieldKind::kDynString);
}

TEST(CtfLayoutTest, EventNamesArePrintableAndUnique) {
  std::vector<CtfEventLayout> layouts = LayoutEvents(
      {EventType{1, "user_events", "a\"b", {}}, EventType{2, "user_events", "a\"b", {}},
       EventType{3, "user_events_multi", "x.1f", {}}});
  EXPECT_EQ(layouts[0].name, "user_events:a_b");
  EXPECT_EQ(layouts[1].name, "user_events:a_b#2");
  EXPECT_EQ(layouts[2].name, "user_events_multi:x.1f");
}

}  // namespace
}  // namespace udiag::record::ctf
