#include "cli/bpftrace_program.h"

#include <fnmatch.h>
#include <gtest/gtest.h>

#include <map>

#include "record/tracedat/format_parser.h"
#include "schema/event_description.h"

namespace udiag::cli {
namespace {

constexpr std::string_view kUsdt = "usdt:/proc/7/exe:udiag:event";

// An event as `udiag bpftrace` sees it: parsed back from its format file.
record::EventType EventFromCommand(uint32_t id, const std::string& command) {
  schema::EventDescription description;
  EXPECT_EQ(schema::ParseCommand(command, &description), 0) << command;
  record::EventType event;
  EXPECT_EQ(record::tracedat::ParseFormatText(schema::FormatFile(description.name, id, description.fields), &event), 0);
  return event;
}

class BpftraceProgramTest : public testing::Test {
 protected:
  BpftraceProgramTest() {
    // status@8 latency_ns@12 path@20: the payload offsets are 0, 4 and 12.
    events_["user_events/http_request"] =
        EventFromCommand(1234, "http_request u32 status; s64 latency_ns; __rel_loc char[] path");
    // status@8 path@12 method@16 a@32 b@33 c@35 d@37 blob@45 s@49
    events_["user_events/access"] = EventFromCommand(
        77, "access u32 status; __data_loc char[] path; char[16] method; s8 a; s16 b; u16 c; u64 d; "
            "__rel_loc u8[] blob; struct pair s 4");
    events_["user_events_multi/m"] = EventFromCommand(90, "m s32 v");
  }

  BpftraceTranslation Translate(std::string_view source) {
    auto lookup = [&](const std::string& system, const std::string& name, std::string* error) {
      auto it = events_.find(system + "/" + name);
      if (it != events_.end()) return std::optional(it->second);
      *error = "no event " + system + ":" + name + " in udiagd";
      return std::optional<record::EventType>();
    };
    // Backwards, so that the translator's name order shows.
    auto glob = [&](const std::string& system, const std::string& pattern, std::string* error) {
      if (!glob_error_.empty()) {
        *error = glob_error_;
        return std::optional<std::vector<std::string>>();
      }
      std::vector<std::string> names;
      for (auto it = events_.rbegin(); it != events_.rend(); ++it) {
        std::string name = it->first.substr(it->first.find('/') + 1);
        if (it->first.starts_with(system + "/") && fnmatch(pattern.c_str(), name.c_str(), 0) == 0) names.push_back(name);
      }
      return std::optional(names);
    };
    return TranslateBpftrace(source, kUsdt, lookup, glob);
  }

  // The program for `source`, failing the test on an error.
  std::string Program(std::string_view source) {
    BpftraceTranslation t = Translate(source);
    EXPECT_EQ(t.error, "") << source;
    return t.program;
  }

  // `source` translates to `program`, enabling `events`.
  void ExpectTranslation(std::string_view source, std::string_view program, const std::vector<std::string>& events) {
    BpftraceTranslation t = Translate(source);
    EXPECT_EQ(t.error, "") << source;
    EXPECT_EQ(t.program, program);
    EXPECT_EQ(t.events, events);
  }

  std::string Error(std::string_view source) {
    BpftraceTranslation t = Translate(source);
    EXPECT_EQ(t.program, "") << "an error gives no program";
    return t.error;
  }

  std::map<std::string, record::EventType> events_;
  std::string glob_error_;  // what listing the events fails with, if set
};

TEST_F(BpftraceProgramTest, IssueExampleReadsTheStatusAndTheRelLocPath) {
  BpftraceTranslation t = Translate("user_events:http_request /args->status >= 500/ { @[str(args->path)] = count(); }");
  EXPECT_EQ(t.error, "");
  EXPECT_EQ(t.program,
            "usdt:/proc/7/exe:udiag:event /arg0 == 1234 && ((*(uint32*)(arg1 + 0)) >= 500)/ "
            "{ @[str((arg1 + 16 + ((*(uint32*)(arg1 + 12)) & 0xffff)))] = count(); }");
  EXPECT_EQ(t.events, std::vector<std::string>{"user_events/http_request"});
}

TEST_F(BpftraceProgramTest, IntegersOfEachSizeAndSign) {
  EXPECT_EQ(Program("user_events:access { print((args->a, args->b, args->c, args->d, args->status)); }"),
            "usdt:/proc/7/exe:udiag:event /arg0 == 77/ { print(((*(int8*)(arg1 + 24)), (*(int16*)(arg1 + 25)), "
            "(*(uint16*)(arg1 + 27)), (*(uint64*)(arg1 + 29)), (*(uint32*)(arg1 + 0)))); }");
  EXPECT_EQ(Program("user_events:http_request { @ = sum(args->latency_ns); }"),
            "usdt:/proc/7/exe:udiag:event /arg0 == 1234/ { @ = sum((*(int64*)(arg1 + 4))); }");
}

TEST_F(BpftraceProgramTest, DataLocOffsetCountsFromTheRecordStart) {
  // The loc word's offset includes the 8-byte common header; arg1 is the payload.
  EXPECT_EQ(Program("user_events:access { @[str(args->path)] = count(); }"),
            "usdt:/proc/7/exe:udiag:event /arg0 == 77/ "
            "{ @[str((arg1 + ((*(uint32*)(arg1 + 4)) & 0xffff) - 8))] = count(); }");
  // Without str(), a loc string is still a string, as a char array is.
  EXPECT_EQ(Program("user_events:access /args->path == \"/a\"/ { }"),
            "usdt:/proc/7/exe:udiag:event /arg0 == 77 && (str((arg1 + ((*(uint32*)(arg1 + 4)) & 0xffff) - 8)) == "
            "\"/a\")/ { }");
  // A length given to str() is kept.
  EXPECT_EQ(Program("user_events:access { printf(\"%s\", str(args->path, 4)); }"),
            "usdt:/proc/7/exe:udiag:event /arg0 == 77/ "
            "{ printf(\"%s\", str((arg1 + ((*(uint32*)(arg1 + 4)) & 0xffff) - 8), 4)); }");
}

TEST_F(BpftraceProgramTest, RelLocBytesAreAnAddress) {
  // blob@45: payload 37, data after the word at 41.
  EXPECT_EQ(Program("user_events:access { @ = *(uint8*)args->blob; }"),
            "usdt:/proc/7/exe:udiag:event /arg0 == 77/ { @ = *(uint8*)(arg1 + 41 + ((*(uint32*)(arg1 + 37)) & 0xffff)); }");
  EXPECT_EQ(Program("user_events:access { @ = args->s; }"),
            "usdt:/proc/7/exe:udiag:event /arg0 == 77/ { @ = (arg1 + 41); }");
}

TEST_F(BpftraceProgramTest, CharArraysAreBoundedStrings) {
  EXPECT_EQ(Program("user_events:access { @[args->method] = count(); @s[str(args->method)] = count(); }"),
            "usdt:/proc/7/exe:udiag:event /arg0 == 77/ "
            "{ @[str(arg1 + 8, 16)] = count(); @s[str((arg1 + 8), 16)] = count(); }");
}

TEST_F(BpftraceProgramTest, CommonFieldsPidAndTidAreTheProducers) {
  EXPECT_EQ(Program("user_events_multi:m { @[pid, tid, args->common_pid, args->common_type, args->common_flags] = "
                    "count(); }"),
            "usdt:/proc/7/exe:udiag:event /arg0 == 90/ { @[arg3, arg4, arg4, arg0, 0] = count(); }");
  // Variables, members, strings and comments named pid or args are left alone.
  EXPECT_EQ(Program("user_events_multi:m { $pid = curtask->pid; @pid[\"args->v pid\"] = $pid; // args pid\n }"),
            "usdt:/proc/7/exe:udiag:event /arg0 == 90/ { $pid = curtask->pid; @pid[\"args->v pid\"] = $pid; "
            "// args pid\n }");
}

TEST_F(BpftraceProgramTest, OtherProbesPassThroughUntouched) {
  std::string other =
      "#include <linux/sched.h>\n"
      "BEGIN { printf(\"pid %d args\\n\", pid); }\n"
      "interval:s:1 { print(@); }\n"
      "uprobe:/lib/*/libc.so.6:malloc /pid == 1/ { @m = count(); }\n"
      "END { clear(@); }\n";
  EXPECT_EQ(Program(other), other);
}

TEST_F(BpftraceProgramTest, SeveralProbesInOneProgram) {
  BpftraceTranslation t = Translate(
      "BEGIN { @start = nsecs; }\n"
      "tracepoint:user_events:http_request { @r = count(); }\n"
      "t:user_events_multi:m, user_events:access /pid > 1/ { @both = count(); }\n"
      "user_events:http_request { @again = count(); }\n"
      "END { }\n");
  EXPECT_EQ(t.error, "");
  EXPECT_EQ(t.program,
            "BEGIN { @start = nsecs; }\n"
            "usdt:/proc/7/exe:udiag:event /arg0 == 1234/ { @r = count(); }\n"
            "usdt:/proc/7/exe:udiag:event /arg0 == 90 && (arg3 > 1)/ { @both = count(); }\n"
            "usdt:/proc/7/exe:udiag:event /arg0 == 77 && (arg3 > 1)/ { @both = count(); }\n"
            "usdt:/proc/7/exe:udiag:event /arg0 == 1234/ { @again = count(); }\n"
            "END { }\n");
  EXPECT_EQ(t.events, (std::vector<std::string>{"user_events/http_request", "user_events_multi/m", "user_events/access"}));
}

TEST_F(BpftraceProgramTest, NestedBracesAndDivisionInPredicates) {
  EXPECT_EQ(Program("user_events_multi:m /args->v / 2 > 1/ { if (args->v > 3) { @[\"}\"] = count(); } }"),
            "usdt:/proc/7/exe:udiag:event /arg0 == 90 && ((*(int32*)(arg1 + 0)) / 2 > 1)/ "
            "{ if ((*(int32*)(arg1 + 0)) > 3) { @[\"}\"] = count(); } }");
}

TEST_F(BpftraceProgramTest, ErrorsNameTheProblem) {
  EXPECT_EQ(Error("user_events:nope { }"), "no event user_events:nope in udiagd");
  EXPECT_EQ(Error("user_events:http_request { @ = args->stat; }"),
            "user_events:http_request has no field `stat` (fields: status, latency_ns, path)");
  EXPECT_EQ(Error("user_events:http_request /args->nope == 1/ { }"),
            "user_events:http_request has no field `nope` (fields: status, latency_ns, path)");
  EXPECT_EQ(Error("user_events:http_request { print(args); }"),
            "user_events:http_request: `args` must be followed by ->FIELD (fields: status, latency_ns, path)");
  EXPECT_EQ(Error("kprobe:foo, user_events:m { }"),
            "`kprobe:foo, user_events:m`: a probe list cannot mix user_events with other probes");
  EXPECT_EQ(Error("user_events:m, kprobe:foo { }"),
            "`user_events:m, kprobe:foo`: a probe list cannot mix user_events with other probes");
  EXPECT_EQ(Error("user_events: { }"), "`user_events:`: no event name");
  EXPECT_EQ(Error("user_events:m args->v { }"),
            "`user_events:m args->v`: expected `,`, a predicate /.../ or `{` after the probe");
}

TEST_F(BpftraceProgramTest, IntegerSizesBpftraceCannotReadAreErrors) {
  record::EventType odd;
  odd.fields.push_back({.type = "u24", .name = "x", .kind = schema::FieldKind::kInteger, .offset = 8, .size = 3});
  events_["user_events/odd"] = odd;
  EXPECT_EQ(Error("user_events:odd { @ = args->x; }"), "field `x` is 3 bytes: not an integer bpftrace reads");
}

TEST_F(BpftraceProgramTest, ProbeIsTheTracepointsName) {
  EXPECT_EQ(Program("t:user_events_multi:m { @[probe] = count(); printf(\"%s\", probe); }"),
            "usdt:/proc/7/exe:udiag:event /arg0 == 90/ "
            "{ @[\"tracepoint:user_events_multi:m\"] = count(); printf(\"%s\", \"tracepoint:user_events_multi:m\"); }");
  // Variables, members and strings named probe are left alone, as are other probes.
  EXPECT_EQ(Program("user_events_multi:m { $probe = @probe[curtask->probe]; print(\"probe\"); }"),
            "usdt:/proc/7/exe:udiag:event /arg0 == 90/ { $probe = @probe[curtask->probe]; print(\"probe\"); }");
  EXPECT_EQ(Program("BEGIN { @[probe] = count(); }"), "BEGIN { @[probe] = count(); }");
}

class BpftraceGlobTest : public BpftraceProgramTest {
 protected:
  BpftraceGlobTest() {
    // code@8 status@12: status is at payload offset 4 here, 0 in http_request.
    events_["user_events/http_error"] = EventFromCommand(1300, "http_error s32 code; u32 status");
  }
};

TEST_F(BpftraceGlobTest, EachMatchingEventGetsTheBlockWithItsOwnFields) {
  ExpectTranslation("user_events:http_* /args->status >= 500/ { @[probe] = count(); }",
                    "usdt:/proc/7/exe:udiag:event /arg0 == 1300 && ((*(uint32*)(arg1 + 4)) >= 500)/ "
                    "{ @[\"tracepoint:user_events:http_error\"] = count(); }\n"
                    "usdt:/proc/7/exe:udiag:event /arg0 == 1234 && ((*(uint32*)(arg1 + 0)) >= 500)/ "
                    "{ @[\"tracepoint:user_events:http_request\"] = count(); }",
                    {"user_events/http_error", "user_events/http_request"});
}

TEST_F(BpftraceGlobTest, ListsMixNamesAndGlobsOfEachSystem) {
  // `*` stays in its system: user_events:* is not user_events_multi:m.
  ExpectTranslation("user_events_multi:m, t:user_events:acc?ss, tracepoint:user_events:* { @ = count(); }",
                    "usdt:/proc/7/exe:udiag:event /arg0 == 90/ { @ = count(); }\n"
                    "usdt:/proc/7/exe:udiag:event /arg0 == 77/ { @ = count(); }\n"
                    "usdt:/proc/7/exe:udiag:event /arg0 == 77/ { @ = count(); }\n"
                    "usdt:/proc/7/exe:udiag:event /arg0 == 1300/ { @ = count(); }\n"
                    "usdt:/proc/7/exe:udiag:event /arg0 == 1234/ { @ = count(); }",
                    {"user_events_multi/m", "user_events/access", "user_events/http_error", "user_events/http_request"});
  EXPECT_EQ(Program("user_events:http_[r]*{ }"), "usdt:/proc/7/exe:udiag:event /arg0 == 1234/ { }");
}

TEST_F(BpftraceGlobTest, AGlobMatchingNothingIsAnError) {
  EXPECT_EQ(Error("user_events:http_request, user_events:ftp_* { }"),
            "tracepoints not found: user_events:ftp_* (udiagd's events: udiag cat available_events)");
  EXPECT_EQ(Error("user_events_multi:http_* { }"),
            "tracepoints not found: user_events_multi:http_* (udiagd's events: udiag cat available_events)");
  glob_error_ = "cannot read available_events: Connection reset by peer";
  EXPECT_EQ(Error("user_events:* { }"), glob_error_);
  EXPECT_EQ(Program("user_events:access { }"), "usdt:/proc/7/exe:udiag:event /arg0 == 77/ { }") << "no glob, no listing";
}

TEST_F(BpftraceGlobTest, EachEventLackingAFieldIsNamed) {
  EXPECT_EQ(Error("user_events:* { @[str(args->path)] = count(); }"),
            "user_events:http_error has no field `path` (fields: code, status)");
  EXPECT_EQ(Error("user_events:* /args->method == \"GET\"/ { }"),
            "user_events:http_error has no field `method` (fields: code, status)\n"
            "user_events:http_request has no field `method` (fields: status, latency_ns, path)");
}

}  // namespace
}  // namespace udiag::cli
