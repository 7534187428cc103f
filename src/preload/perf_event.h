// perf_event_open(PERF_TYPE_TRACEPOINT) on udiag's event ids, emulated in the
// preload: the descriptor behaves like the kernel's (enable, disable, reset,
// read of the count, an mmap'ed perf ring of PERF_RECORD_SAMPLE records with
// the kernel's PERF_SAMPLE_RAW layout, PERF_RECORD_LOST when it is full, poll
// readiness). The samples are this process's own writes: the daemon marks the
// event used by perf (enable bits, user_events_status) while the fd is open,
// but does not forward other processes' events. See docs/dropin.md.
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace udiag::preload {

// Opens a perf event if it is one of udiag's (a tracepoint whose config is an
// id the daemon knows, on this process's threads): true with `*result` set
// (a descriptor, or -1 and errno). False: not ours, the kernel should see it.
bool PerfOpen(const perf_event_attr* attr, pid_t pid, int cpu, int group_fd, unsigned long flags,
              long* result);

int PerfClose(int fd);
int PerfIoctl(int fd, unsigned long request, void* arg);
ssize_t PerfRead(int fd, void* buf, size_t count);
void* PerfMmap(void* addr, size_t len, int prot, int flags, int fd, off_t offset);

// Whether any perf event is open: the write path's only cost otherwise.
extern std::atomic<int> g_open_perf_events;
inline bool PerfActive() { return g_open_perf_events.load(std::memory_order_relaxed) > 0; }

// A write of [write_index][payload] to data file `fd` succeeded: the perf
// events on that event that see this thread get a sample.
void PerfOnWrite(int fd, const iovec* iov, int iovcnt);

}  // namespace udiag::preload
