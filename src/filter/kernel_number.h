// The kernel's kstrtoull()/kstrtoll() with base 0, which filter values are
// read with: 0x hex, a leading 0 octal, else decimal; nothing after the digits
// but one newline; out of range fails.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace udiag::filter {

std::optional<uint64_t> KernelStrToU64(std::string_view text);
std::optional<int64_t> KernelStrToS64(std::string_view text);

}  // namespace udiag::filter
