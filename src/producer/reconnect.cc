// Surviving a daemon restart: the agent connects again (with backoff) and
// gives the new daemon everything this process had registered, so consumers
// that enable the events there see them without the program doing anything.
//
//  - Each data file the program holds is replaced, under the same descriptor
//    number, by a new one of the new daemon (dup3 over it).
//  - Each enabler is registered again with its command and flags; the new
//    daemon picks the event ids. The file's new mirror maps the write
//    indices the program already has to those ids, so they keep working.
// Until that is done, calls fail with ENOTCONN and writes with EBADF (their
// events are disabled), counted lost: docs/compat.md.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <memory>
#include <thread>

#include "producer/client.h"
#include "producer/data_files.h"
#include "producer/legacy_abi.h"

namespace udiag::producer {
namespace {

ino_t InodeOf(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) ? st.st_ino : 0;
}

// dup3 by system call: under the preload, libc's dup3 is the preload's,
// which would mark the program's descriptor as not a data file.
bool ReplaceDescriptor(int from, int to) {
  int flags = fcntl(to, F_GETFD);
  if (flags < 0) return false;
  return syscall(SYS_dup3, from, to, (flags & FD_CLOEXEC) ? O_CLOEXEC : 0) == to;
}

}  // namespace

void Client::Reconnect() {
  int delay_ms = kFirstRetryMs;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    if (Connect(0) == 0 && Replay() == 0) break;
    delay_ms = std::min(delay_ms * 2, kLastRetryMs);
  }
  {
    std::lock_guard lock(mu_);
    dead_ = false;
  }
  g_fast.connected.store(1);
}

int Client::Replay() {
  if (int err = ReplayDataFiles()) return err;
  return ReplayEnablers();
}

int Client::OpenDataFileDirect(base::ScopedFd* out) {
  Reply reply;
  if (int err = CallDirect(ipc::MsgType::kOpenDataFile, nullptr, {}, &reply)) return err;
  if (reply.error) return reply.error;
  if (reply.fds.size() != 1) return EPROTO;
  *out = std::move(reply.fds[0]);
  return 0;
}

int Client::ReplayDataFiles() {
  std::vector<int> fds;
  {
    std::lock_guard lock(DataFiles().mutex());
    fds = DataFiles().Descriptors();
  }
  // Descriptors of one file (dup'ed) get one new file between them.
  std::map<int, ino_t> old_inode;
  std::map<ino_t, base::ScopedFd> fresh;
  for (int fd : fds) {
    ino_t inode = InodeOf(fd);
    if (!inode) continue;
    old_inode[fd] = inode;
    if (fresh.contains(inode)) continue;
    if (int err = OpenDataFileDirect(&fresh[inode])) return err;
  }
  std::vector<std::pair<ino_t, ino_t>> renamed;
  {
    // Under the table's lock: udiag_close takes a descriptor out of the table
    // before it closes it, so a descriptor still here is still the program's
    // data file (the inode check catches a plain close() and reuse).
    std::lock_guard lock(DataFiles().mutex());
    for (auto [fd, inode] : old_inode) {
      if (!DataFiles().Get(fd) || InodeOf(fd) != inode) continue;
      int from = fresh[inode].get();
      if (ReplaceDescriptor(from, fd)) renamed.emplace_back(inode, InodeOf(from));
    }
  }
  std::sort(renamed.begin(), renamed.end());
  renamed.erase(std::unique(renamed.begin(), renamed.end()), renamed.end());
  for (auto [before, after] : renamed) legacy::DataFileReplaced(before, after);
  return 0;
}

int Client::ReplayEnablers() {
  std::vector<LocalEnabler> list;
  {
    std::lock_guard lock(mu_);
    list = enablers_;
  }
  const uint32_t epoch = g_fast.epoch.load();
  std::map<int, std::unique_ptr<DataFileMirror>> mirrors;
  base::ScopedFd orphanage;  // for enablers whose data file was closed
  for (const LocalEnabler& en : list) {
    bool file_open;
    {
      std::lock_guard lock(DataFiles().mutex());
      file_open = en.fd >= 0 && DataFiles().Get(en.fd) != nullptr;
    }
    if (!file_open && !orphanage) {
      if (int err = OpenDataFileDirect(&orphanage)) return err;
    }
    ipc::Encoder body;
    ipc::RegisterRequest{en.flags, en.addr, en.bit, en.size, en.command}.Encode(body);
    Reply reply;
    int fds[] = {file_open ? en.fd : orphanage.get()};
    if (int err = CallDirect(ipc::MsgType::kRegister, &body, fds, &reply)) return err;
    ipc::RegisterReply answer;
    ipc::Decoder d(reply.body);
    // Refused by the new daemon (its limits, say): the enabler stays,
    // cleared, and is tried again after the next restart.
    if (reply.error || !answer.Decode(d)) continue;
    {
      std::lock_guard lock(mu_);
      for (LocalEnabler& mine : enablers_) {
        if (mine.addr != en.addr || mine.bit != en.bit) continue;
        mine.event_id = answer.event.id;
        WriteEnableBit(mine, answer.status != 0);
      }
    }
    if (!file_open) continue;
    auto& mirror = mirrors[en.fd];
    if (!mirror) mirror = std::make_unique<DataFileMirror>(epoch, true);
    mirror->Set(en.write_index, EventSlot{answer.event.id, answer.event.min_size, answer.event.locs});
  }
  // Every file gets its new mirror, enablers or not: an index the program
  // holds must never be looked up among the new daemon's.
  std::lock_guard lock(DataFiles().mutex());
  for (int fd : DataFiles().Descriptors()) {
    auto it = mirrors.find(fd);
    auto* mirror = it != mirrors.end() ? it->second.release() : new DataFileMirror(epoch, true);
    mirror->ContinueAfter(*DataFiles().Get(fd));
    DataFiles().Replace(fd, mirror);
  }
  return 0;
}

}  // namespace udiag::producer
