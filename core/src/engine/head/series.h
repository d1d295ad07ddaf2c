// A series' identity and the canonical encoding of tag sets, shared by the
// head (head.h), the catalog and the period files.
//
// Thread-safety: pure functions and values.
#pragma once

#include <compare>
#include <string>
#include <string_view>

#include "cairn/core/table.h"

namespace cairn {

// A series' identity within its table (DESIGN §3): the device, the measure
// and the dimensions (every tag but the device and the table's declared
// attributes), the latter in their canonical encoding (EncodeTagMap) so that
// equal tag sets compare equal byte for byte. Ordered by device first: one
// device's series are adjacent, then one measure's.
struct SeriesKey {
  std::string device_id;
  std::string measure_name;
  std::string dimensions_key;
  friend auto operator<=>(const SeriesKey&, const SeriesKey&) = default;
};

// The canonical encoding of a tag set: varint count, then (varint length,
// bytes) of each name and value in name order. The catalog and the period
// files store dimensions and attributes in it (period_format.md).
std::string EncodeTagMap(const TagMap& tags);
Result<TagMap> DecodeTagMap(std::string_view bytes);

// Splits a record's tags (all but the device) into the series' dimensions
// and its attributes, by the table's declared attribute names.
void SplitTags(const TableOptions& options, const TagMap& tags, TagMap* dimensions, TagMap* attributes);

}  // namespace cairn
