#include "base/unix_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace udiag::base {
namespace {

int MakeAddress(const std::string& path, sockaddr_un* addr) {
  if (path.size() >= sizeof(addr->sun_path)) return ENAMETOOLONG;
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  std::memcpy(addr->sun_path, path.data(), path.size());
  return 0;
}

}  // namespace

ErrorOr<ScopedFd> ListenSeqpacket(const std::string& path, int backlog) {
  sockaddr_un addr;
  if (int err = MakeAddress(path, &addr)) return Errno{err};
  ScopedFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return Errno{errno};
  ::unlink(path.c_str());
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) return Errno{errno};
  if (::listen(fd.get(), backlog) < 0) return Errno{errno};
  return fd;
}

ErrorOr<ScopedFd> ConnectSeqpacket(const std::string& path, uint32_t timeout_ms) {
  sockaddr_un addr;
  if (int err = MakeAddress(path, &addr)) return Errno{err};
  ScopedFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!fd) return Errno{errno};
  if (timeout_ms != 0) {
    // A Unix socket's connect waits for backlog room under SO_SNDTIMEO.
    const timeval tv{static_cast<time_t>(timeout_ms / 1000), static_cast<suseconds_t>(timeout_ms % 1000 * 1000)};
    if (::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
        ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
      return Errno{errno};
    }
  }
  while (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) {
    if (errno == EAGAIN && timeout_ms != 0) return Errno{ETIMEDOUT};
    if (errno != EINTR) return Errno{errno};
  }
  return fd;
}

ErrorOr<ScopedFd> AcceptSeqpacket(int listen_fd) {
  int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return Errno{errno};
  return ScopedFd(fd);
}

int SeqpacketPair(ScopedFd* first, ScopedFd* second, bool first_cloexec) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) < 0) return errno;
  first->Reset(fds[0]);
  second->Reset(fds[1]);
  if (!first_cloexec && ::fcntl(fds[0], F_SETFD, 0) < 0) return errno;
  return 0;
}

ErrorOr<PeerCredentials> GetPeerCredentials(int fd) {
  ucred cred;
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) return Errno{errno};
  PeerCredentials out;
  out.pid = cred.pid;
  out.uid = cred.uid;
  out.gid = cred.gid;
  std::vector<gid_t> groups(64);
  for (;;) {
    socklen_t glen = groups.size() * sizeof(gid_t);
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &glen) == 0) {
      groups.resize(glen / sizeof(gid_t));
      break;
    }
    if (errno != ERANGE) return Errno{errno};
    groups.resize(glen / sizeof(gid_t) + 1);
  }
  out.groups = std::move(groups);
  return out;
}

int SendMessage(int fd, std::span<const uint8_t> data, std::span<const int> fds, bool dontwait) {
  if (data.size() > kMaxMessageBytes || fds.size() > kMaxMessageFds) return EMSGSIZE;
  iovec iov{const_cast<uint8_t*>(data.data()), data.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxMessageFds)];
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    if (::sendmsg(fd, &msg, MSG_NOSIGNAL | (dontwait ? MSG_DONTWAIT : 0)) >= 0) return 0;
    if (errno != EINTR) return errno;
  }
}

int ReceiveMessage(int fd, std::vector<uint8_t>* data, std::vector<ScopedFd>* fds, bool dontwait) {
  data->resize(kMaxMessageBytes);
  iovec iov{data->data(), data->size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxMessageFds)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | (dontwait ? MSG_DONTWAIT : 0));
  } while (n < 0 && errno == EINTR);
  if (n < 0) return errno;
  fds->clear();
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int received;
      std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds->emplace_back(received);
    }
  }
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    fds->clear();
    return EMSGSIZE;
  }
  if (n == 0) return ECONNRESET;
  data->resize(n);
  return 0;
}

}  // namespace udiag::base
