// The historic ABIs, so that programs written for them run unmodified:
//  - user_events of 5.18-6.3: DIAG_IOCSREG with a 24-byte struct user_reg
//    returning status_index/status_bit into an mmap'ed status page;
//  - the udiag RFC (July 2021): /dev/udiag, where DIAG_IOCSREG takes a bare
//    event name and returns a status index, each descriptor carries one event,
//    and a write() is the event's data.
// Both read the process's legacy::StatusPage. Limits and differences are in
// docs/dropin.md and docs/compat.md.
#pragma once

#include <sys/ioctl.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "producer/client.h"

namespace udiag::producer::legacy {

// sizeof the 5.18 struct user_reg {u32 size; u64 name_args; u32 status_index;
// u32 write_index;}, naturally aligned. The current ABI rejects this size
// with EINVAL, so it cannot be mistaken for a current registration.
inline constexpr uint32_t kUserRegV1Size = 24;

// The RFC's ioctls: register by name (returns the status index), delete by name.
inline constexpr unsigned long kRfcIocsReg = _IOW('*', 0, char*);
inline constexpr unsigned long kRfcIocsDel = _IOW('*', 1, char*);
// The RFC's subsystem had one fixed field layout for every event.
inline constexpr size_t kRfcMaxName = 96;  // including the NUL

// DIAG_IOCSREG with the 24-byte struct at `arg` on data file `fd`. 0 or errno.
int RegisterV1(Client& client, int fd, uint64_t arg);

// ioctl on a /dev/udiag descriptor: the status index (> 0) or -1 with errno.
int RfcIoctl(int fd, unsigned long request, void* arg);
// write() on a /dev/udiag descriptor: `count` or -1 with errno.
ssize_t RfcWrite(int fd, const void* buf, size_t count);

// mmap of the status page through the status file (`rfc` false: exactly one
// page, PROT_READ, MAP_SHARED, else EINVAL) or /dev/udiag (`rfc` true: exactly
// one page, else EFAULT, as the RFC).
void* MapStatusPage(void* addr, size_t len, int prot, int flags, off_t offset, bool rfc);
// munmap by the program: forget status-page views in the range.
void ForgetStatusViews(void* addr, size_t len);

// A data file descriptor is being closed: when it is this process's last
// descriptor of the file, its historic registrations end, as the kernel's
// ended with the file.
void ReleaseOnClose(int fd);

// After a daemon restart the descriptors of file `before` now hold the new
// daemon's file `after` (reconnect.cc): the registrations follow.
void DataFileReplaced(ino_t before, ino_t after);

// Called from the client's fork handlers.
void ForkPrepare();
void ForkParent();
void ForkChild();

}  // namespace udiag::producer::legacy
