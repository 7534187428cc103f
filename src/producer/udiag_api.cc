// The C ABI of include/udiag/udiag.h: open, ioctl and close of data files.
// Registration follows the kernel's DIAG_IOCSREG check order (spec §6).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "schema/event_description.h"
#include "producer/client.h"
#include "producer/data_files.h"
#include "producer/legacy_abi.h"
#include "producer/registration.h"
#include "producer/user_memory.h"
#include "udiag/udiag.h"

namespace udiag::producer {
namespace {

// The largest user address on x86-64 with 4-level paging: the kernel's
// access_ok() limit.
constexpr uint64_t kTaskSize = 0x7ffffffff000ULL;

int Fail(int err) {
  errno = err;
  return -1;
}

// Reads an extensible struct the way copy_struct_from_user does.
int CopyStruct(uint64_t addr, void* dst, size_t known) {
  uint32_t size;
  if (CopyFromUser(&size, addr, sizeof(size))) return EFAULT;
  if (size > static_cast<uint64_t>(sysconf(_SC_PAGESIZE))) return E2BIG;
  if (size < known) return EINVAL;
  if (CopyFromUser(dst, addr, known)) return EFAULT;
  for (uint64_t off = known; off < size; ++off) {
    uint8_t byte;
    if (CopyFromUser(&byte, addr + off, 1)) return EFAULT;
    if (byte) return E2BIG;
  }
  return 0;
}

int Register(Client& client, int fd, uint64_t arg) {
  uint32_t size;
  if (CopyFromUser(&size, arg, sizeof(size))) return EFAULT;
  if (size == legacy::kUserRegV1Size) return legacy::RegisterV1(client, fd, arg);
  user_reg reg;
  if (int err = CopyStruct(arg, &reg, sizeof(reg))) return err;
  if (reg.flags & ~(USER_EVENT_REG_MAX - 1)) return EINVAL;
  if (reg.enable_size != 4 && reg.enable_size != 8) return EINVAL;
  if (reg.enable_addr % reg.enable_size) return EINVAL;
  if (reg.enable_bit > reg.enable_size * 8 - 1) return EINVAL;
  if (reg.enable_addr + reg.enable_size > kTaskSize) return EFAULT;
  if (client.HasEnabler(reg.enable_addr, reg.enable_bit)) return EADDRINUSE;
  std::string command;
  if (int err = CopyStringFromUser(reg.name_args, schema::kMaxCommandBytes, &command)) return err;
  // The agent will write the bit as soon as the reply arrives, so the word
  // must be writable now (the kernel finds out after parsing; see compat.md).
  if (!IsWritable(reg.enable_addr, reg.enable_size)) return EFAULT;
  Registration done;
  LocalEnabler enabler{0, reg.enable_addr, reg.enable_bit, reg.enable_size};
  if (int err = RegisterEnabler(client, fd, reg.flags, command, enabler, &done)) return err;
  CopyToUser(arg + offsetof(user_reg, write_index), &done.write_index, sizeof(done.write_index));
  return 0;
}

int Unregister(Client& client, uint64_t arg) {
  user_unreg unreg;
  if (int err = CopyStruct(arg, &unreg, sizeof(unreg))) return err;
  if (unreg.__reserved || unreg.__reserved2) return EINVAL;
  return UnregisterEnabler(client, unreg.disable_addr, unreg.disable_bit);
}

int Delete(Client& client, uint64_t arg) {
  std::string name;
  if (int err = CopyStringFromUser(arg, schema::kMaxCommandBytes, &name)) return err;
  return DeleteEvent(client, name);
}

}  // namespace
}  // namespace udiag::producer

using namespace udiag::producer;

extern "C" int udiag_open(void) {
  Client* client = Client::Get();
  if (!client) return -1;
  Reply reply;
  if (int err = client->Call(udiag::ipc::MsgType::kOpenDataFile, nullptr, {}, &reply)) return Fail(err);
  if (reply.error) return Fail(reply.error);
  if (reply.fds.size() != 1) return Fail(EPROTO);
  int fd = reply.fds[0].Release();
  // Like an open() without O_CLOEXEC: the descriptor survives exec.
  fcntl(fd, F_SETFD, 0);
  std::lock_guard lock(DataFiles().mutex());
  DataFiles().FindOrAdd(fd, g_fast.epoch.load());
  return fd;
}

extern "C" int udiag_ioctl(int fd, unsigned long request, void* arg) {
  if (request != DIAG_IOCSREG && request != DIAG_IOCSDEL && request != DIAG_IOCSUNREG) return Fail(ENOTTY);
  if (fd < 0 || fcntl(fd, F_GETFD) < 0) return Fail(EBADF);
  Client* client = Client::Get();
  if (!client) return Fail(EBADF);
  auto addr = reinterpret_cast<uint64_t>(arg);
  int err = request == DIAG_IOCSREG   ? Register(*client, fd, addr)
            : request == DIAG_IOCSDEL ? Delete(*client, addr)
                                      : Unregister(*client, addr);
  return err ? Fail(err) : 0;
}

extern "C" int udiag_close(int fd) {
  legacy::ReleaseOnClose(fd);
  DataFiles().Remove(fd);
  return close(fd);
}
