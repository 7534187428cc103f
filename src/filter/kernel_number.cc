#include "filter/kernel_number.h"

#include <cctype>
#include <limits>

namespace udiag::filter {

std::optional<uint64_t> KernelStrToU64(std::string_view text) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  unsigned base = 10;
  if (text.size() >= 3 && text[0] == '0' && (text[1] | 0x20) == 'x' && std::isxdigit(static_cast<unsigned char>(text[2]))) {
    base = 16;
    text.remove_prefix(2);
  } else if (!text.empty() && text[0] == '0') {
    base = 8;
  }
  uint64_t value = 0;
  size_t digits = 0;
  for (; digits < text.size(); ++digits) {
    unsigned char c = text[digits];
    unsigned d = std::isdigit(c) ? c - '0' : std::isxdigit(c) ? (c | 0x20) - 'a' + 10 : 99;
    if (d >= base) break;
    if (value > (std::numeric_limits<uint64_t>::max() - d) / base) return std::nullopt;  // ERANGE
    value = value * base + d;
  }
  if (digits == 0) return std::nullopt;
  text.remove_prefix(digits);
  if (!text.empty() && text[0] == '\n') text.remove_prefix(1);
  if (!text.empty()) return std::nullopt;
  return value;
}

std::optional<int64_t> KernelStrToS64(std::string_view text) {
  constexpr uint64_t kMax = std::numeric_limits<int64_t>::max();
  if (!text.empty() && text[0] == '-') {
    auto magnitude = KernelStrToU64(text.substr(1));
    if (!magnitude || *magnitude > kMax + 1) return std::nullopt;
    return static_cast<int64_t>(0 - *magnitude);
  }
  auto value = KernelStrToU64(text);
  if (!value || *value > kMax) return std::nullopt;
  return static_cast<int64_t>(*value);
}

}  // namespace udiag::filter
