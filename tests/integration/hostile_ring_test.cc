// (f) A producer that scribbles random garbage over its own ring while
// writing: udiagd must survive and keep serving well-behaved producers.
#include <signal.h>

#include <gtest/gtest.h>

#include "consumer/private_daemon.h"
#include "integration_util.h"

namespace udiag::integration {
namespace {

TEST(HostileRingTest, GarbageInARingDoesNotHurtTheDaemonOrOtherProducers) {
  std::string error;
  auto daemon = consumer::PrivateDaemon::Start(&error);
  ASSERT_NE(daemon, nullptr) << error;
  const std::string dir = daemon->dir();
  auto consumer = MustConnect(dir);
  ASSERT_EQ(consumer.AutoEnable("hostile"), 0);
  ASSERT_EQ(consumer.AutoEnable("honest"), 0);

  TempDir scratch;
  std::string hostile_out = scratch.path() + "/hostile.out";
  std::string hostile_err = scratch.path() + "/hostile.err";
  pid_t hostile = StartProcess({Bin("hostile_producer"), "hostile", "1000"},
                               {.udiag_dir = dir, .stdout_path = hostile_out, .stderr_path = hostile_err});
  ASSERT_GT(hostile, 0);
  // The honest producer runs during the attack: 300 events over ~1.5 s.
  constexpr uint32_t kHonest = 300;
  pid_t honest = StartProcess({Bin("hammer_producer"), "honest", std::to_string(kHonest), "5000"}, {.udiag_dir = dir});
  ASSERT_GT(honest, 0);

  int hostile_status = WaitExit(hostile, 20s);
  EXPECT_EQ(WaitExit(honest, 20s), 0);
  std::string out = ReadFileText(hostile_out);
  // The attacker itself must have got as far as corrupting its ring; if it
  // crashed on its own garbage that is its business, but say so.
  EXPECT_NE(out.find("corrupting"), std::string::npos)
      << "hostile_producer status " << hostile_status << ": " << ReadFileText(hostile_err);
  if (hostile_status != 0) {
    std::cerr << "note: hostile_producer ended with status " << hostile_status << " (" << out << ")\n";
  }

  // The daemon is alive and serving.
  ASSERT_TRUE(ProcessRunning(daemon->pid()));
  auto fresh = consumer::ConsumerClient::Connect(dir);
  ASSERT_TRUE(fresh.ok()) << "udiagd no longer accepts consumers: " << strerror(fresh.error());
  std::string trace;
  EXPECT_TRUE(PollUntil([&] {
    auto t = fresh->Read("trace");
    trace = t.ok() ? *t : "";
    return SeqsOf(trace, "honest").size() == kHonest;
  })) << "honest events: " << SeqsOf(trace, "honest").size();
  EXPECT_EQ(CheckExactlyOnce(SeqsOf(trace, "honest"), kHonest), "");
  // The hostile producer's first, intact write made it.
  EXPECT_EQ(SeqsOf(trace, "hostile").count(0), 1u);

  // And a producer started after the attack still works.
  ASSERT_EQ(fresh->AutoEnable("later"), 0);
  ASSERT_EQ(RunProgram({Bin("hammer_producer"), "later", "50"}, {.udiag_dir = dir}), 0);
  EXPECT_TRUE(PollUntil([&] {
    auto t = fresh->Read("trace");
    return t.ok() && SeqsOf(*t, "later").size() == 50;
  }));
  EXPECT_TRUE(ProcessRunning(daemon->pid()));
}

}  // namespace
}  // namespace udiag::integration
