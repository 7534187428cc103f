// Waiting on a ring header word shared between processes: the writer waits
// for room on `writer_waiting`, the daemon wakes it. Shared (not private)
// futexes, because the two sides map the memfd at different addresses.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace udiag::ring {

// Sleeps while *word == expected, at most timeout_ns; returns early on a
// wake, a signal or a changed word (the caller re-checks what it waits for).
inline void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns) {
  timespec timeout{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &timeout, nullptr, 0);
}

inline void FutexWake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

}  // namespace udiag::ring
