// The `hist` file's tables as JSON, for `udiag hist --json`: one object per
// histogram, {"trigger", "entries": [{key: value, ..., "hitcount": N, val: N}],
// "totals": {"hits", "entries", "dropped"}}. Keys keep the table's text
// (trimmed; plain numbers become numbers), values are numbers.
#pragma once

#include <string>
#include <string_view>

namespace udiag::trigger {

std::string HistTablesToJson(std::string_view hist_file);

}  // namespace udiag::trigger
