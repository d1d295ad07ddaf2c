// The JSON text both sinks store a record's fields and a series' dimensions
// in (ingest_schema.md §2). Every field value round-trips exactly: each value
// is an object naming its type, integers are written in full, and doubles in
// the shortest form that reads back to the same bits ("-0" as a JSON string,
// because PostgreSQL's jsonb numbers are decimals without a negative zero).
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/core/record.h"
#include "cairn/platform/status.h"

namespace cairn::ingest {

// {"name":{"double":21.5},"n":{"int64":-3},...}, members in `fields` order.
// Precondition: no value is absent (monostate).
std::string FieldsToJson(const std::vector<Field>& fields);

// The inverse of FieldsToJson, also for the same text as normalised by
// PostgreSQL's jsonb (members reordered, numbers in plain notation). Fields
// come sorted by name. Corruption naming the problem for anything else.
Result<std::vector<Field>> FieldsFromJson(std::string_view json);

// {"site":"north",...}: members sorted by name (bytewise), no whitespace,
// strings escaped as FieldsToJson escapes them. For a series' dimensions
// this text is canonical (one map, one text), so the sinks key readings and
// series by it (ingest_schema.md §1). Attributes are written the same way.
std::string TagsToJson(const TagMap& tags);
// The inverse, also for jsonb's normalised text. Corruption otherwise.
Result<TagMap> TagsFromJson(std::string_view json);

}  // namespace cairn::ingest
