// Producer cost against the number of consumers: the enabled 32-byte write
// with 0, 1 and 3 record sessions reading every event at once. With 0, the
// event is enabled in the top instance and nobody reads. Producers write each
// event once into their own ring whatever the number of consumers (the daemon
// fans out), so the three should be within noise; on a 2-core machine the
// readers do compete for the CPUs. Measured, never asserted.
#include <benchmark/benchmark.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench_daemon.h"
#include "consumer/consumer_client.h"
#include "consumer/record_stream.h"
#include "udiag/udiag.hpp"

namespace {

using udiag::consumer::ConsumerClient;
using udiag::consumer::RecordStream;

// Destroyed at exit, which stops the daemon and removes its directory.
udiag::bench::BenchDaemon* Daemon() {
  static std::unique_ptr<udiag::bench::BenchDaemon> daemon = [] {
    std::string error;
    auto started = udiag::bench::BenchDaemon::Start(&error);
    if (!started) std::fprintf(stderr, "consumers_bench: %s\n", error.c_str());
    return started;
  }();
  return daemon.get();
}

class CountingSink : public udiag::consumer::RecordSink {
 public:
  void OnEventType(const udiag::record::EventType&) override {}
  void OnTask(const udiag::record::Task&) override {}
  void OnRecord(const udiag::record::Record&) override { ++records; }
  void OnLost(uint64_t count) override { lost += count; }
  uint64_t records = 0, lost = 0;
};

// A record session: its own instance, the event enabled there, and a thread
// reading the stream.
class Session {
 public:
  Session(const std::string& dir, int n) : instance_("consumer" + std::to_string(n)) {
    auto client = ConsumerClient::Connect(dir);
    if (!client.ok()) return;
    control_.emplace(std::move(client).value());
    if (control_->Mkdir("instances/" + instance_, /*owned=*/true) ||
        control_->AutoEnable("bench_consumers", instance_))
      return;
    auto stream = RecordStream::Open(dir, instance_);
    if (!stream.ok()) return;
    stream_ = std::move(stream).value();
    reader_ = std::thread([this] {
      while (!stop_.load()) stream_->Poll(50, sink_);
    });
  }
  ~Session() {
    stop_ = true;
    if (reader_.joinable()) reader_.join();
  }
  bool ok() const { return stream_ != nullptr; }
  uint64_t records() const { return sink_.records; }

 private:
  std::string instance_;
  std::optional<ConsumerClient> control_;
  std::unique_ptr<RecordStream> stream_;
  CountingSink sink_;
  std::atomic<bool> stop_{false};
  std::thread reader_;
};

void BM_EnabledWriteWithConsumers(benchmark::State& state) {
  auto* daemon = Daemon();
  if (!daemon) {
    state.SkipWithError("no daemon");
    return;
  }
  udiag::data_file file;
  udiag::event<uint64_t, uint64_t, uint64_t, uint64_t> event("bench_consumers", {"a", "b", "c", "d"});
  if (file.error() || event.register_on(file)) {
    state.SkipWithError("cannot register");
    return;
  }
  daemon->Write("tracing_on", "0");  // the top instance enables but keeps nothing
  daemon->SetEnabled("bench_consumers", true);
  std::vector<std::unique_ptr<Session>> sessions;
  for (int i = 0; i < state.range(0); ++i) {
    sessions.push_back(std::make_unique<Session>(daemon->dir(), i));
    if (!sessions.back()->ok()) {
      state.SkipWithError("cannot start a record session");
      return;
    }
  }
  uint64_t seq = 0;
  for (auto _ : state) {
    event.write(seq, seq, seq, seq);
    ++seq;
  }
  state.counters["consumers"] = static_cast<double>(state.range(0));
  daemon->SetEnabled("bench_consumers", false);
}
BENCHMARK(BM_EnabledWriteWithConsumers)->Arg(0)->Arg(1)->Arg(3)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
