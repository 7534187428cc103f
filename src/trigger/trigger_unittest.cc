#include "trigger/trigger.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace udiag::trigger {
namespace {

std::string Listed(std::string_view text) {
  Spec spec;
  EXPECT_EQ(Parse(text, &spec), 0) << text;
  return ListingLine(spec, spec.count);
}

TEST(TriggerParse, ListsAsTheKernelPrints) {
  EXPECT_EQ(Listed("traceon"), "traceon:unlimited\n");
  EXPECT_EQ(Listed("traceon:"), "traceon:unlimited\n");  // an empty parameter is none, as the kernel
  EXPECT_EQ(Listed("traceoff:3 if seq > 10"), "traceoff:count=3 if seq > 10\n");
  EXPECT_EQ(Listed("snapshot:0x10"), "snapshot:count=16\n");
  EXPECT_EQ(Listed("stacktrace if status >= 500"), "stacktrace:unlimited if status >= 500\n");
  EXPECT_EQ(Listed("enable_event:user_events:foo"), "enable_event:user_events:foo:unlimited\n");
  EXPECT_EQ(Listed("disable_event:user_events:foo:2 if x == 1"), "disable_event:user_events:foo:count=2 if x == 1\n");
  EXPECT_EQ(Listed("enable_hist:user_events:foo"), "enable_hist:user_events:foo:unlimited\n");
  EXPECT_EQ(Listed("disable_hist:user_events:foo:1"), "disable_hist:user_events:foo:count=1\n");
}

TEST(TriggerParse, HistKeepsItsParameterAndFilter) {
  Spec spec;
  ASSERT_EQ(Parse("!hist:keys=seq.hex:size=128 if seq > 3", &spec), 0);
  EXPECT_EQ(spec.command, Command::kHist);
  EXPECT_TRUE(spec.remove);
  EXPECT_EQ(spec.param, "keys=seq.hex:size=128");
  EXPECT_EQ(spec.filter, "seq > 3");
}

TEST(TriggerParse, Removal) {
  Spec spec;
  ASSERT_EQ(Parse("!traceoff:3 if junk", &spec), 0);
  EXPECT_TRUE(spec.remove);
  EXPECT_EQ(spec.command, Command::kTraceOff);
  ASSERT_EQ(Parse("!enable_event:user_events:foo", &spec), 0);
  EXPECT_TRUE(spec.remove);
  EXPECT_EQ(spec.event, "foo");
}

TEST(TriggerParse, ErrorsAreEinval) {
  Spec spec;
  for (std::string_view bad : {"bogus", "traceon:x", "traceon:-1", "traceon junk", "traceon if",
                               "traceon:3 when x", "enable_event", "enable_event:user_events",
                               "enable_event:user_events:foo:", "enable_event:user_events:foo:z", "hist", "hist:keys=x junk", "enable_hist:user_events"}) {
    EXPECT_EQ(Parse(bad, &spec), EINVAL) << bad;
  }
}

TEST(TriggerKinds, SharedAsTheKernelsTriggerTypes) {
  Spec on, off, snap, en_foo, dis_foo, en_bar, hist_on, hist_off;
  ASSERT_EQ(Parse("enable_hist:s:foo", &hist_on), 0);
  ASSERT_EQ(Parse("disable_hist:s:foo", &hist_off), 0);
  ASSERT_EQ(Parse("traceon", &on), 0);
  ASSERT_EQ(Parse("traceoff", &off), 0);
  ASSERT_EQ(Parse("snapshot", &snap), 0);
  ASSERT_EQ(Parse("enable_event:s:foo", &en_foo), 0);
  ASSERT_EQ(Parse("disable_event:s:foo", &dis_foo), 0);
  ASSERT_EQ(Parse("enable_event:s:bar", &en_bar), 0);
  EXPECT_TRUE(SameKind(on, off));
  EXPECT_FALSE(SameKind(on, snap));
  EXPECT_TRUE(SameKind(en_foo, dis_foo));
  EXPECT_FALSE(SameKind(en_foo, en_bar));
  EXPECT_TRUE(SameKind(hist_on, hist_off));
  EXPECT_FALSE(SameKind(hist_on, en_foo));
}

}  // namespace
}  // namespace udiag::trigger
