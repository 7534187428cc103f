#include "cli/mark_command.h"

#include <fmt/format.h>

#include "cli/cli_support.h"
#include "mmiotrace/mark_client.h"

namespace udiag::cli {

int Mark(const std::string& dir, const std::vector<std::string>& words) {
  std::string text = fmt::format("{}", fmt::join(words, " "));
  if (mmiotrace::SendMark(dir, text) == 0) {
    fmt::print(stderr, "udiag: mark: no mmiotrace session is running in {}\n", dir);
    return kExitFailure;
  }
  return 0;
}

}  // namespace udiag::cli
