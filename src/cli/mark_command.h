// `udiag mark TEXT`: a MARK line in every running `udiag mmiotrace` session
// of the daemon directory. See docs/mmiotrace.md.
#pragma once

#include <string>
#include <vector>

namespace udiag::cli {

// Joins `words` with spaces. 0 when at least one session took the mark,
// else kExitFailure after saying so.
int Mark(const std::string& dir, const std::vector<std::string>& words);

}  // namespace udiag::cli
