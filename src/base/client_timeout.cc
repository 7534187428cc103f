#include "base/client_timeout.h"

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace udiag::base {

uint32_t ClientTimeoutMs() {
  const char* text = std::getenv("UDIAG_TIMEOUT_MS");
  if (text == nullptr) return kDefaultClientTimeoutMs;
  uint32_t ms = 0;
  const char* end = text + std::strlen(text);
  auto [at, ec] = std::from_chars(text, end, ms);
  return ec == std::errc() && at == end && ms > 0 ? ms : kDefaultClientTimeoutMs;
}

}  // namespace udiag::base
