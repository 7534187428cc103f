// Reads an ftrace event `format` text (user_events.md §13.2) back into an
// event type: the inverse of schema::FormatFile, also accepting the kernel's
// own event formats.
#pragma once

#include <string_view>

#include "record/trace_model.h"

namespace udiag::record::tracedat {

// Fills id, name and the non-common fields of `out` (system is left alone).
// A type is rebuilt from the declaration: "char msg[20]" gives "char[20]",
// "__rel_loc char data[]" gives "__rel_loc char[]". Returns 0 or EINVAL.
int ParseFormatText(std::string_view text, EventType* out);

}  // namespace udiag::record::tracedat
