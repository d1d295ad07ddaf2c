// Records as the shell and the HTTP API answer them, and the tag filters
// their read commands take.
//
// A record table has the columns time, measure, then one column per tag
// name (the series' dimensions and attributes; empty where a series lacks
// that tag), version and ttl when any record has one, then one column per
// field name. A field named like an earlier column is suffixed " (field)"
// so that JSON keys stay unique. When there are tag columns, the note
// "tags" lists them, comma-separated, so that a JSON reader can tell a
// record's tags from its fields.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/core/engine.h"
#include "cairn/shell/command_result.h"

namespace cairn {

CommandResult RecordTable(const std::vector<RecordRow>& rows);
// The same table from a columnar range answer, without a row object per
// record.
CommandResult RecordTable(const RangeColumns& records);

// Which columns a record table has besides time and measure.
struct RecordLayout {
  std::set<std::string> tags;    // dimension and attribute names
  std::set<std::string> fields;  // field names
  bool version = false, ttl = false;
};
// What RecordTable(records) shows: the tags and fields its rows carry,
// version and ttl when a row has one.
RecordLayout LayoutOf(const RangeColumns& records);
// Every column a record of `measures` can have, version and ttl included: a
// layout that stays the same from one page of a range to the next, as a
// CSV stream needs.
RecordLayout LayoutOf(const std::vector<MeasureInfo>& measures);
// A table with at least the columns of `layout`, and those of LayoutOf(records)
// that it lacks (a field first written after the layout was made).
CommandResult RecordTable(const RangeColumns& records, const RecordLayout& layout);

// `name` + " (field)", repeated until no name in `used` has it; the result
// is added to `used`.
std::string UniqueColumnName(const std::string& name, std::set<std::string>* used);

// A count as a cell (saturating at INT64_MAX).
Value Count(uint64_t value);
Value TimeValue(int64_t unix_nanos);
// An absolute expiry in Unix seconds as a time when it can be one.
Value ExpiryValue(int64_t ttl_seconds);

// Parses a --tags option: `NAME=VALUE[,NAME=VALUE...]`. A backslash makes
// the next character (',', '=' or '\') part of the name or value. Each name
// once; names and values follow the identifier rules of record.h (a value
// may be empty). InvalidArgument naming the problem otherwise.
Result<TagMap> ParseTagsOption(std::string_view text);
// The inverse: the --tags text for `tags`, escaping as ParseTagsOption reads.
std::string FormatTagsOption(const TagMap& tags);

}  // namespace cairn
