#include "cli/bpftrace_command.h"

#include <fmt/format.h>
#include <limits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cli/bpftrace_program.h"
#include "cli/cli_support.h"
#include "cli/termination_signals.h"
#include "consumer/event_match.h"
#include "consumer/spawn.h"
#include "record/tracedat/format_parser.h"

namespace udiag::cli {
namespace {

// $UDIAG_BPFTRACE, else bpftrace from $PATH.
std::string BpftraceBinary() {
  const char* chosen = std::getenv("UDIAG_BPFTRACE");
  return chosen && *chosen ? chosen : "bpftrace";
}

bool ReadProgram(const BpftraceOptions& options, std::string* program, std::vector<std::string>* bpftrace_args) {
  *bpftrace_args = options.bpftrace_args;
  if (!options.program.empty()) {
    // With -e, the first word after `--` lands in FILE: it is bpftrace's.
    if (!options.file.empty()) bpftrace_args->insert(bpftrace_args->begin(), options.file);
    *program = options.program;
    return true;
  }
  if (options.file.empty()) {
    fmt::print(stderr, "udiag: bpftrace: give a program with -e PROGRAM or a FILE\n");
    return false;
  }
  std::ifstream in(options.file);
  if (!in) {
    Fail("cannot read " + options.file, errno ? errno : ENOENT);
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  *program = text.str();
  return true;
}

// The event's format, read from the daemon's tree.
EventLookup FormatsFrom(consumer::ConsumerClient& client) {
  return [&client](const std::string& system, const std::string& name, std::string* error) {
    auto text = client.Read(fmt::format("events/{}/{}/format", system, name));
    record::EventType event;
    if (!text.ok()) {
      *error = text.error() == ENOENT
                   ? fmt::format("no event {}:{} in udiagd (registered events: udiag cat available_events)", system, name)
                   : fmt::format("cannot read the format of {}:{}: {}", system, name, std::strerror(text.error()));
      return std::optional<record::EventType>();
    }
    if (record::tracedat::ParseFormatText(*text, &event) != 0) {
      *error = fmt::format("cannot parse the format of {}:{}", system, name);
      return std::optional<record::EventType>();
    }
    return std::optional(std::move(event));
  };
}

// The names of udiagd's events of `system` matching `pattern`, from its
// available_events.
EventGlob MatchesFrom(consumer::ConsumerClient& client) {
  return [&client](const std::string& system, const std::string& pattern, std::string* error) {
    auto listing = client.Read("available_events");
    if (!listing.ok()) {
      *error = fmt::format("cannot read available_events: {}", std::strerror(listing.error()));
      return std::optional<std::vector<std::string>>();
    }
    std::vector<std::string> names;
    for (consumer::EventName& event : consumer::MatchEvents(*listing, system + ":" + pattern)) {
      names.push_back(std::move(event.name));
    }
    return std::optional(std::move(names));
  };
}

// A probe instance of our own, with the events on: it goes with our
// connection, however udiag ends.
int EnableInProbeInstance(consumer::ConsumerClient& client, const std::vector<std::string>& events) {
  std::string instance = fmt::format("instances/bpftrace-{}", getpid());
  if (int err = client.Mkdir(instance, /*owned=*/true)) return Fail("mkdir " + instance, err);
  if (int err = client.Write(instance + "/usdt_probe", "1", false)) return Fail(instance + "/usdt_probe", err);
  for (const std::string& event : events) {
    std::string enable = fmt::format("{}/events/{}/enable", instance, event);
    if (int err = client.Write(enable, "1", false)) return Fail(enable, err);
  }
  return 0;
}

// bpftrace reads the probe from udiagd's file, by its path as seen from the
// daemon (/proc/<pid>/root/<path>): it must still be the file that runs.
bool DaemonBinaryIsOnDisk(pid_t daemon) {
  std::string exe = fmt::format("/proc/{}/exe", daemon);
  char target[PATH_MAX];
  ssize_t n = readlink(exe.c_str(), target, sizeof(target) - 1);
  if (n < 0) {
    Fail("cannot read " + exe, errno);
    return false;
  }
  std::string path(target, static_cast<size_t>(n));
  constexpr std::string_view kDeleted = " (deleted)";  // the kernel's mark on a removed file
  if (path.ends_with(kDeleted)) path.resize(path.size() - kDeleted.size());
  struct stat running, on_disk;
  if (stat(exe.c_str(), &running) == 0 && stat(fmt::format("/proc/{}/root{}", daemon, path).c_str(), &on_disk) == 0 &&
      running.st_dev == on_disk.st_dev && running.st_ino == on_disk.st_ino) {
    return true;
  }
  fmt::print(stderr,
             "udiag: bpftrace: udiagd's binary {} was replaced or deleted since udiagd started, and bpftrace "
             "finds the probe through that file: restart udiagd\n",
             path);
  return false;
}

int RunBpftrace(std::vector<std::string> argv) {
  auto pid = consumer::Spawn(argv, [] { prctl(PR_SET_PDEATHSIG, SIGTERM); });
  if (!pid.ok()) {
    Fail("cannot run " + argv[0] + (pid.error() == ENOENT ? " (Debian: apt-get install bpftrace)" : ""), pid.error());
    return pid.error() == ENOENT ? 127 : 126;
  }
  HandleTerminationSignals(*pid);
  return consumer::WaitForExit(*pid);
}

}  // namespace

int Bpftrace(const BpftraceOptions& options) {
  std::string source;
  std::vector<std::string> bpftrace_args;
  if (!ReadProgram(options, &source, &bpftrace_args)) return kExitUsage;
  auto client = ConnectOrExplain(options.dir);
  if (!client.ok()) return kExitFailure;
  pid_t daemon = client->DaemonPid();
  if (daemon <= 0) {
    fmt::print(stderr, "udiag: bpftrace: cannot tell udiagd's process (is it in another pid namespace?)\n");
    return kExitFailure;
  }
  std::string usdt = fmt::format("usdt:/proc/{}/exe:udiag:event", daemon);
  BpftraceTranslation translation = TranslateBpftrace(source, usdt, FormatsFrom(*client), MatchesFrom(*client));
  if (!translation.error.empty()) {
    std::istringstream lines(translation.error);
    for (std::string line; std::getline(lines, line);) fmt::print(stderr, "udiag: bpftrace: {}\n", line);
    return kExitFailure;
  }
  if (options.print_program) {
    fmt::print("{}\n", translation.program);
    return 0;
  }
  if (!DaemonBinaryIsOnDisk(daemon)) return kExitFailure;
  if (int err = EnableInProbeInstance(*client, translation.events)) return err;
  // -p: the probe of this daemon only (not of others running the same
  // binary), and bpftrace ends when it does.
  std::vector<std::string> argv = {BpftraceBinary()};
  argv.insert(argv.end(), bpftrace_args.begin(), bpftrace_args.end());
  argv.insert(argv.end(), {"-p", std::to_string(daemon), "-e", translation.program});
  return RunBpftrace(std::move(argv));
}

}  // namespace udiag::cli
