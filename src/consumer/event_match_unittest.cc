#include "consumer/event_match.h"

#include <gtest/gtest.h>

namespace udiag::consumer {
namespace {

constexpr const char* kAvailable =
    "user_events:count\n"
    "user_events:count_total\n"
    "user_events_multi:count.1a2b\n";

TEST(MatchEventsTest, BareNameMatchesTracepointNameOnly) {
  EXPECT_EQ(MatchEvents(kAvailable, "count"), (std::vector<EventName>{{"user_events", "count"}}));
}

TEST(MatchEventsTest, BareGlobSpansSystems) {
  EXPECT_EQ(MatchEvents(kAvailable, "count*"),
            (std::vector<EventName>{{"user_events", "count"},
                                    {"user_events", "count_total"},
                                    {"user_events_multi", "count.1a2b"}}));
}

TEST(MatchEventsTest, SystemPatternMatchesFullName) {
  EXPECT_EQ(MatchEvents(kAvailable, "user_events_multi:*"),
            (std::vector<EventName>{{"user_events_multi", "count.1a2b"}}));
  EXPECT_EQ(MatchEvents(kAvailable, "*:count"), (std::vector<EventName>{{"user_events", "count"}}));
}

TEST(MatchEventsTest, NothingMatches) {
  EXPECT_TRUE(MatchEvents(kAvailable, "missing").empty());
  EXPECT_TRUE(MatchEvents("", "*").empty());
}

TEST(MatchEventsTest, LastLineWithoutNewline) {
  EXPECT_EQ(MatchEvents("user_events:a\nuser_events:b", "b"), (std::vector<EventName>{{"user_events", "b"}}));
}

TEST(EnablePathTest, NamesTheEventsEnableFile) {
  EXPECT_EQ(EnablePath({"user_events", "count"}), "events/user_events/count/enable");
}

}  // namespace
}  // namespace udiag::consumer
