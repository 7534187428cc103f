#include "cli/export_command.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <thread>

#include "cli/cli_support.h"
#include "cli/session_end.h"
#include "cli/termination_signals.h"
#include "consumer/private_daemon.h"
#include "consumer/record_stream.h"
#include "export/event_exporter.h"
#include "record/trace_files.h"

namespace udiag::cli {
namespace {

constexpr int kPollMs = 100;
// After the command ends (or Ctrl-C), this long without events ends the stream.
constexpr auto kDrainQuiet = std::chrono::milliseconds(300);

std::string BootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

std::string HostName() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

int FromFile(const ExportOptions& options, exporter::EventExporter& sink) {
  auto reader = record::OpenTraceReader(options.from);
  if (!reader.ok()) return Fail(options.from, reader.error());
  for (const record::EventType& type : (*reader)->event_types()) sink.OnEventType(type);
  for (const record::Task& task : (*reader)->tasks()) sink.OnTask(task);
  record::Record record;
  while ((*reader)->Next(&record)) {
    sink.OnRecord(record);
    sink.Flush(false);
  }
  if ((*reader)->info().lost_at_end) sink.OnLost((*reader)->info().lost_at_end);
  return 0;
}

int Live(const ExportOptions& options, exporter::EventExporter& sink) {
  std::string dir = options.dir;
  std::unique_ptr<consumer::PrivateDaemon> private_daemon;
  auto client = ConnectOrStartPrivate(&dir, "exporting", &private_daemon);
  if (!client.ok()) return kExitFailure;
  consumer::ConsumerClient control = std::move(client).value();
  std::string instance = fmt::format("export-{}", getpid());
  std::string path = "instances/" + instance;
  if (int err = control.Mkdir(path, /*owned=*/true)) return Fail("mkdir " + path, err);
  if (int err = control.Write(path + "/buffer_size_kb", std::to_string(options.size_kb), false)) {
    return Fail(path + "/buffer_size_kb", err);
  }
  std::vector<std::string> globs = options.events.empty() ? std::vector<std::string>{"*"} : options.events;
  for (const std::string& glob : globs) {
    if (int err = control.AutoEnable(glob, instance)) return Fail("enable " + glob, err);
  }
  auto opened = consumer::RecordStream::Open(dir, instance);
  if (!opened.ok()) return Fail("record stream", opened.error());
  auto stream = std::move(opened).value();

  SessionEnd session_end;
  if (int status = session_end.Start(options.command, dir)) return status;
  const std::atomic<bool>& stop = session_end.stop();
  auto quiet_since = std::chrono::steady_clock::now();
  int err = 0;
  for (;;) {
    bool stopping = stop.load();
    err = stream->Poll(kPollMs, sink, /*doze=*/!stopping);
    sink.Flush(false);
    if (err == EPIPE) {
      err = 0;
      break;
    }
    if (err && err != ETIMEDOUT) break;
    auto now = std::chrono::steady_clock::now();
    if (!err || !stopping) quiet_since = now;
    if (stopping && now - quiet_since >= kDrainQuiet) {
      err = 0;
      break;
    }
  }
  int status = session_end.Finish();
  if (err) return Fail("exporting", err);
  return status;
}

}  // namespace

int Export(const ExportOptions& options) {
  exporter::ClickHouseClient client(options.url);
  exporter::BatchSpool spool(options.spool, options.spool_mb << 20);
  exporter::ExportSettings settings;
  settings.database = options.database;
  settings.cluster = options.cluster;
  settings.boot_id = options.from.empty() ? BootId() : std::string();
  settings.host = options.host.empty() ? HostName() : options.host;
  exporter::EventExporter sink(settings, &client, &spool);
  bool schema = sink.CreateSchema();
  if (options.create_schema) return schema ? 0 : kExitFailure;
  if (!schema) fmt::print(stderr, "udiag export: ClickHouse is not reachable; spooling to {}\n", options.spool);

  int status = options.from.empty() ? Live(options, sink) : FromFile(options, sink);
  sink.Flush(true);
  // Ctrl-C or the command's end flushes; a server that is down gets --retry seconds to return.
  bool clear = sink.SendSpooled();
  for (auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(options.retry_s);
       !clear && std::chrono::steady_clock::now() < give_up;) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    clear = sink.SendSpooled();
  }
  fmt::print(stderr, "udiag export: {} events, {} rows sent, {} lost{}\n", sink.events(), sink.rows_sent(),
             sink.lost(), clear ? "" : fmt::format(", {} batches left in {} (the next run sends them)", spool.count(),
                                                 options.spool));
  if (!clear && status == 0) return kExitFailure;
  return status;
}

}  // namespace udiag::cli
