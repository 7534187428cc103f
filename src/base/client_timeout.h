// How long a client (libudiag, the CLI) waits for udiagd before a call fails
// with ETIMEDOUT: UDIAG_TIMEOUT_MS milliseconds, default 5000. A stopped or
// wedged daemon must not hang its producers and consumers.
#pragma once

#include <cerrno>
#include <cstdint>

namespace udiag::base {

inline constexpr uint32_t kDefaultClientTimeoutMs = 5000;

// UDIAG_TIMEOUT_MS when it is a positive decimal number, else the default.
uint32_t ClientTimeoutMs();

// A socket call that gave up after SO_RCVTIMEO/SO_SNDTIMEO reports EAGAIN:
// to the caller that is a timeout.
inline int TimeoutErrno(int err) { return err == EAGAIN || err == EWOULDBLOCK ? ETIMEDOUT : err; }

}  // namespace udiag::base
