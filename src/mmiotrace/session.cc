#include "mmiotrace/session.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/unix_socket.h"
#include "mmiotrace/log_format.h"
#include "mmiotrace/session_wire.h"
#include "mmiotrace/thread_rings.h"

namespace udiag::mmiotrace {

// A record that waited for room in its ring must still arrive within the lag.
static_assert(std::chrono::nanoseconds(ThreadRings::kFullWaitNs) * 2 <= Session::kMergeLag);

namespace {

// After the command exits, how long a process it forked just before may
// still take to connect.
constexpr uint64_t kLateConnectNs = 100'000'000;
constexpr int kPollMs = 10;

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

std::string ReadAll(const char* path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool ValidKind(RecordKind kind) { return kind >= RecordKind::kRead && kind <= RecordKind::kUnknown; }

}  // namespace

base::ErrorOr<std::unique_ptr<Session>> Session::Create(const std::string& daemon_dir, int out_fd) {
  if (mkdir(daemon_dir.c_str(), 0700) != 0 && errno != EEXIST) return base::Errno{errno};
  std::string path = daemon_dir + "/" + kSocketPrefix + std::to_string(getpid()) + kSocketSuffix;
  int ids = open(IdsPath(path).c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (ids < 0) return base::Errno{errno};
  uint32_t zero = 0;
  bool written = write(ids, &zero, sizeof(zero)) == sizeof(zero);
  close(ids);
  if (!written) return base::Errno{EIO};
  auto listener = base::ListenSeqpacket(path);
  if (!listener.ok()) {
    unlink(IdsPath(path).c_str());
    return base::Errno{listener.error()};
  }
  std::unique_ptr<Session> session(new Session(path, std::move(listener).value(), out_fd));
  session->events_.Open();  // no daemon: the caller says so once
  return session;
}

Session::~Session() {
  unlink(socket_path_.c_str());
  unlink(IdsPath(socket_path_).c_str());
}

void Session::WriteOut(const std::string& text) {
  const char* data = text.data();
  size_t left = text.size();
  while (left > 0 && write_error_ == 0) {
    ssize_t n = write(out_fd_, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      write_error_ = n < 0 ? errno : EIO;
      break;
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
}

void Session::Add(uint64_t ts_ns, std::string line) { held_.emplace(std::pair{ts_ns, arrivals_++}, std::move(line)); }

void Session::Take(const std::vector<uint8_t>& message) {
  WireHeader header;
  if (message.size() < sizeof(header)) return;
  std::memcpy(&header, message.data(), sizeof(header));
  const uint8_t* body = message.data() + sizeof(header);
  size_t body_size = message.size() - sizeof(header);
  switch (header.type) {
    case WireType::kRecords: {
      if (body_size != header.count * sizeof(Record)) return;
      for (uint32_t i = 0; i < header.count; ++i) {
        Record record;
        std::memcpy(&record, body + i * sizeof(Record), sizeof(record));
        if (!ValidKind(record.kind)) continue;
        if (record.kind == RecordKind::kMap) {
          ++summary_.mappings;
        } else if (record.kind != RecordKind::kUnmap) {
          ++summary_.accesses;
        }
        Add(record.ts_ns, FormatRecord(record));
      }
      break;
    }
    case WireType::kLost:
      summary_.lost += header.value;
      lost_unreported_ += header.value;
      break;
    case WireType::kMark: {
      std::string text(reinterpret_cast<const char*>(body), body_size);
      ++summary_.marks;
      events_.EmitMark(static_cast<int32_t>(header.count), text);
      Add(header.value, FormatMark(header.value, text));
      break;
    }
  }
}

void Session::AcceptAll() {
  while (true) {
    pollfd pending{listener_.get(), POLLIN, 0};
    if (poll(&pending, 1, 0) <= 0) return;
    auto connection = base::AcceptSeqpacket(listener_.get());
    if (!connection.ok()) return;
    connections_.push_back(std::move(connection).value());
  }
}

bool Session::ReceiveAll(int fd) {
  std::vector<uint8_t> message;
  std::vector<base::ScopedFd> fds;  // none expected; closed if sent
  while (true) {
    int err = base::ReceiveMessage(fd, &message, &fds, /*dontwait=*/true);
    if (err == EAGAIN) return true;
    if (err != 0) return false;
    Take(message);
  }
}

void Session::WriteOlderThan(uint64_t ts_ns) {
  if (lost_unreported_ > 0) {
    WriteOut(FormatLost(lost_unreported_));
    lost_unreported_ = 0;
  }
  std::string text;
  auto end = held_.lower_bound({ts_ns, 0});
  for (auto it = held_.begin(); it != end; ++it) text += it->second;
  held_.erase(held_.begin(), end);
  WriteOut(text);
}

int Session::Serve(const std::function<bool()>& command_exited) {
  std::string header = VersionLine() + PcidevLines(ReadAll("/proc/bus/pci/devices"));
  WriteOut(header);
  uint64_t exited_at = 0;
  while (true) {
    std::vector<pollfd> fds{{listener_.get(), POLLIN, 0}};
    for (const base::ScopedFd& connection : connections_) fds.push_back({connection.get(), POLLIN, 0});
    poll(fds.data(), fds.size(), kPollMs);
    AcceptAll();
    std::erase_if(connections_, [this](const base::ScopedFd& connection) { return !ReceiveAll(connection.get()); });
    uint64_t now = NowNs();
    if (exited_at == 0 && command_exited()) exited_at = now;
    WriteOlderThan(now - std::chrono::nanoseconds(kMergeLag).count());
    if (exited_at != 0 && connections_.empty() && now - exited_at > kLateConnectNs) break;
  }
  AcceptAll();
  for (base::ScopedFd& connection : connections_) ReceiveAll(connection.get());
  WriteOlderThan(UINT64_MAX);
  return write_error_;
}

}  // namespace udiag::mmiotrace
