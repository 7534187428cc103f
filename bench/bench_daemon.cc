#include "bench_daemon.h"

#include <cstdlib>
#include <cstring>
#include <optional>

#include "consumer/consumer_client.h"
#include "consumer/private_daemon.h"

namespace udiag::bench {

using consumer::ConsumerClient;
using consumer::PrivateDaemon;

struct BenchDaemon::Impl {
  std::unique_ptr<PrivateDaemon> daemon;
  std::optional<ConsumerClient> control;
};

BenchDaemon::BenchDaemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

BenchDaemon::~BenchDaemon() {
  impl_->control.reset();
  impl_->daemon.reset();
}

std::unique_ptr<BenchDaemon> BenchDaemon::Start(std::string* error) {
  auto impl = std::make_unique<Impl>();
  impl->daemon = PrivateDaemon::Start(error);
  if (!impl->daemon) {
    *error = "cannot start udiagd: " + *error;
    return nullptr;
  }
  setenv("UDIAG_DIR", impl->daemon->dir().c_str(), 1);
  auto client = ConsumerClient::Connect(impl->daemon->dir());
  if (!client.ok()) {
    *error = std::string("cannot connect to udiagd: ") + std::strerror(client.error());
    return nullptr;
  }
  impl->control.emplace(std::move(client).value());
  return std::unique_ptr<BenchDaemon>(new BenchDaemon(std::move(impl)));
}

pid_t BenchDaemon::pid() const { return impl_->daemon->pid(); }
const std::string& BenchDaemon::dir() const { return impl_->daemon->dir(); }

int BenchDaemon::Write(const std::string& path, std::string_view text) {
  return impl_->control->Write(path, text, false);
}

int BenchDaemon::Read(const std::string& path, std::string* out) {
  auto r = impl_->control->Read(path);
  if (!r.ok()) return r.error();
  *out = std::move(r).value();
  return 0;
}

int BenchDaemon::SetEnabled(const std::string& event_name, bool on) {
  return Write("events/user_events/" + event_name + "/enable", on ? "1" : "0");
}

int BenchDaemon::StreamPipe(const std::string& path, const std::function<bool(std::string_view)>& on_chunk,
                            const std::atomic<bool>* stop, int drain_ms) {
  auto client = ConsumerClient::Connect(dir());
  if (!client.ok()) return client.error();
  return client.value().StreamPipe(path, on_chunk, stop, std::chrono::milliseconds(drain_ms));
}

}  // namespace udiag::bench
