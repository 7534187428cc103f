#include "cli/hist_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <thread>

#include "cli/cli_support.h"
#include "cli/session_end.h"
#include "consumer/private_daemon.h"
#include "trigger/hist_json.h"

namespace udiag::cli {
namespace {

using std::chrono::milliseconds;

// How often we look for the event to appear (a command registers it as it starts).
constexpr milliseconds kPollInterval{10};

std::string Joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

std::string EventDir(const std::string& instance, const std::string& event) {
  size_t colon = event.find(':');
  std::string system = colon == std::string::npos ? "user_events" : event.substr(0, colon);
  std::string name = colon == std::string::npos ? event : event.substr(colon + 1);
  return fmt::format("instances/{}/events/{}/{}", instance, system, name);
}

}  // namespace

std::string HistTriggerText(const HistOptions& options) {
  std::string text = "hist:keys=" + Joined(options.keys);
  if (!options.vals.empty()) text += ":vals=" + Joined(options.vals);
  if (!options.sort.empty()) text += ":sort=" + options.sort;
  if (!options.filter.empty()) text += " if " + options.filter;
  return text;
}

int Hist(const HistOptions& options) {
  std::string dir = options.dir;
  std::unique_ptr<consumer::PrivateDaemon> private_daemon;  // outlives the client
  auto client = ConnectOrStartPrivate(&dir, "histogram", &private_daemon);
  if (!client.ok()) return kExitFailure;
  // Owned by this connection: the instance, and so the histogram, go with us.
  const std::string instance = fmt::format("hist-{}", getpid());
  if (int err = client->Mkdir("instances/" + instance, /*owned=*/true)) return Fail("mkdir instances/" + instance, err);
  const std::string event_dir = EventDir(instance, options.event);
  const std::string trigger = HistTriggerText(options);
  // Set now if the event exists, so that a bad key fails before anything runs.
  int armed = client->Write(event_dir + "/trigger", trigger, true);
  if (armed != 0 && armed != ENOENT) return Fail(event_dir + "/trigger: " + trigger, armed);

  // Otherwise the daemon sets it as the event is registered, before the
  // registration returns: a command's first events are counted too.
  if (armed == ENOENT && (armed = client->AutoEnable(options.event, instance, "", trigger)) != 0) {
    return Fail("enable " + options.event, armed);
  }

  SessionEnd session_end;
  if (int status = session_end.Start(options.command, dir)) return status;
  while (!session_end.stop().load()) std::this_thread::sleep_for(kPollInterval);
  const int status = session_end.Finish();
  auto table = client->Read(event_dir + "/hist");  // drains the rings first
  if (!table.ok()) return Fail(event_dir + "/hist", table.error());
  if (!WriteToStdout(options.json ? trigger::HistTablesToJson(*table) : *table)) return kExitFailure;
  return status;
}

}  // namespace udiag::cli
