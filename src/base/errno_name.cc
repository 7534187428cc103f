#include "base/errno_name.h"

#include <string.h>

#include <cerrno>

namespace udiag::base {

std::string ErrnoName(int err) {
  // glibc >= 2.32 knows the names; fall back to the number for the rest.
  if (const char* name = strerrorname_np(err)) return name;
  return "errno " + std::to_string(err);
}

std::string DescribeErrno(int err) { return ErrnoName(err) + ": " + strerror(err); }

}  // namespace udiag::base
