// Symbolic names for errno values ("EADDRINUSE"), for messages users can grep.
#pragma once

#include <string>

namespace udiag::base {

// "EINVAL" for EINVAL; "errno 1234" for values without a name.
std::string ErrnoName(int err);

// "EINVAL: Invalid argument" — the form every udiag error message uses.
std::string DescribeErrno(int err);

}  // namespace udiag::base
