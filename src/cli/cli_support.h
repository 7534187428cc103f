// What every udiag command shares: reaching the daemon and reporting errors.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/error_or.h"
#include "consumer/consumer_client.h"
#include "consumer/private_daemon.h"

namespace udiag::cli {

inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Prints "udiag: <what>: <ERRNO_NAME>: <strerror>" to stderr and returns
// kExitFailure.
int Fail(std::string_view what, int err);

// Says on stderr why connecting to the daemon at `dir` failed with `err`,
// with how to start one when none is running; returns kExitFailure.
int FailToConnect(const std::string& dir, int err);

// Connects to the daemon serving `dir` (already resolved), FailToConnect()
// when that does not work.
base::ErrorOr<consumer::ConsumerClient> ConnectOrExplain(const std::string& dir);

// Connects to the daemon serving `*dir`; when none runs there, starts a
// private one for the caller's lifetime (kept in `*private_daemon`), says so
// on stderr ("<doing> with a private one"), and points `*dir` at it. Failures
// are explained on stderr.
base::ErrorOr<consumer::ConsumerClient> ConnectOrStartPrivate(
    std::string* dir, std::string_view doing, std::unique_ptr<consumer::PrivateDaemon>* private_daemon);

// Enables `events` (every event when empty) in instances/<instance> ("" =
// top) for as long as `client` stays connected, including events created
// later; filters[i] ("": none) goes to the `filter` of each event events[i]
// matches. A filter that does not parse for an event already registered is
// reported with the instance's error_log entry; returns 0 or kExitFailure.
int EnableEvents(consumer::ConsumerClient& client, const std::vector<std::string>& events,
                 const std::vector<std::string>& filters, const std::string& instance);

// ../lib/<name> next to this program, else under $UDIAG_BIN_DIR/../lib (an
// install and a build tree alike); empty when neither has it.
std::string FindUdiagLibrary(const std::string& name);

// Writes all of `text` to stdout, unbuffered; false when stdout is gone.
bool WriteToStdout(std::string_view text);

}  // namespace udiag::cli
