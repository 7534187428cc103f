// Field values as Perfetto debug annotations (DebugAnnotation in
// protos/perfetto/trace/track_event/debug_annotation.proto): the typed
// arguments shown in the UI's details panel and args table.
#pragma once

#include "record/perfetto/proto_encoder.h"
#include "schema/field_values.h"

namespace udiag::record::perfetto {

// One DebugAnnotation named value.name. Signed, errno, pid and time values
// become int_value; unsigned, hex and port uint_value; bools bool_value (0/1
// only); floats double_value; strings string_value; bytes, addresses, UUIDs
// and undecodable values their text; arrays and structs a NestedValue (ARRAY
// or DICT), whose integers are int64 (unsigned ones above INT64_MAX as text).
ProtoMessage EncodeDebugAnnotation(const schema::TypedValue& value);

}  // namespace udiag::record::perfetto
