// `udiag recover FILE`: finishes a trace.dat whose `udiag record` was killed
// or ran out of disk (docs/recording.md, "When the recorder dies").
#pragma once

#include <string>

namespace udiag::cli {

int Recover(const std::string& path);

}  // namespace udiag::cli
