// `udiag mark`'s side: a MARK for every running mmiotrace session of this
// user, i.e. every <daemon dir>/mmiotrace-*.sock that accepts a connection.
#pragma once

#include <string>

namespace udiag::mmiotrace {

// Stamps `text` now (CLOCK_MONOTONIC) and sends it to each session in
// `daemon_dir`. Returns the number of sessions that took it.
int SendMark(const std::string& daemon_dir, const std::string& text);

}  // namespace udiag::mmiotrace
