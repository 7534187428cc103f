#include "cli/tree_commands.h"

#include <fmt/format.h>

#include <cerrno>
#include <string_view>

#include "cli/cli_support.h"
#include "cli/trace_command.h"
#include "consumer/event_match.h"

namespace udiag::cli {
namespace {

bool IsTracePipe(std::string_view path) {
  std::string_view name = path.substr(path.find_last_of('/') + 1);
  return name == "trace_pipe";
}

std::string JoinWords(const std::vector<std::string>& words) {
  return fmt::format("{}\n", fmt::join(words, " "));
}

}  // namespace

int Cat(const std::string& dir, const std::string& path) {
  auto client = ConnectOrExplain(dir);
  if (!client.ok()) return kExitFailure;
  if (IsTracePipe(path)) return FollowPipe(std::move(client).value(), path);
  auto text = client->Read(path);
  if (!text.ok()) return Fail(path, text.error());
  return WriteToStdout(*text) ? 0 : Fail("stdout", errno);
}

int Write(const std::string& dir, const std::string& path, const std::vector<std::string>& words, bool append) {
  auto client = ConnectOrExplain(dir);
  if (!client.ok()) return kExitFailure;
  if (int err = client->Write(path, JoinWords(words), append)) return Fail(path, err);
  return 0;
}

int List(const std::string& dir, const std::string& path) {
  auto client = ConnectOrExplain(dir);
  if (!client.ok()) return kExitFailure;
  auto entries = client->List(path);
  if (!entries.ok()) return Fail(path.empty() ? "/" : path, entries.error());
  std::string out;
  for (const auto& [name, is_directory] : *entries) out += fmt::format("{}{}\n", name, is_directory ? "/" : "");
  return WriteToStdout(out) ? 0 : Fail("stdout", errno);
}

int MakeDirectory(const std::string& dir, const std::string& path) {
  auto client = ConnectOrExplain(dir);
  if (!client.ok()) return kExitFailure;
  if (int err = client->Mkdir(path)) return Fail(path, err);
  return 0;
}

int RemoveDirectory(const std::string& dir, const std::string& path) {
  auto client = ConnectOrExplain(dir);
  if (!client.ok()) return kExitFailure;
  if (int err = client->Rmdir(path)) return Fail(path, err);
  return 0;
}

int SetEnabled(const std::string& dir, const std::vector<std::string>& patterns, bool enable) {
  auto client = ConnectOrExplain(dir);
  if (!client.ok()) return kExitFailure;
  auto available = client->Read("available_events");
  if (!available.ok()) return Fail("available_events", available.error());
  // Every pattern is checked before anything changes, so a typo does not
  // leave the command half applied.
  std::vector<consumer::EventName> events;
  for (const std::string& pattern : patterns) {
    std::vector<consumer::EventName> matches = consumer::MatchEvents(*available, pattern);
    if (matches.empty()) return Fail(fmt::format("{} {}", enable ? "enable" : "disable", pattern), ENOENT);
    events.insert(events.end(), matches.begin(), matches.end());
  }
  for (const consumer::EventName& event : events) {
    std::string path = consumer::EnablePath(event);
    if (int err = client->Write(path, enable ? "1\n" : "0\n", /*append=*/false)) return Fail(path, err);
  }
  return 0;
}

}  // namespace udiag::cli
