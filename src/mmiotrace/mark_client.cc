#include "mmiotrace/mark_client.h"

#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "base/unix_socket.h"
#include "mmiotrace/session_wire.h"

namespace udiag::mmiotrace {

int SendMark(const std::string& daemon_dir, const std::string& text) {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  WireHeader header{WireType::kMark, static_cast<uint32_t>(getpid()),
                    static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec)};
  std::vector<uint8_t> message(sizeof(header) + text.size());
  std::memcpy(message.data(), &header, sizeof(header));
  std::memcpy(message.data() + sizeof(header), text.data(), text.size());
  int sent = 0;
  DIR* dir = opendir(daemon_dir.c_str());
  if (!dir) return 0;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (!name.starts_with(kSocketPrefix) || !name.ends_with(kSocketSuffix)) continue;
    auto socket = base::ConnectSeqpacket(daemon_dir + "/" + name);
    if (socket.ok() && base::SendMessage(socket->get(), message) == 0) ++sent;
  }
  closedir(dir);
  return sent;
}

}  // namespace udiag::mmiotrace
