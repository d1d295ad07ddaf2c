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

// A SeriesKey that borrows its strings, ordered as SeriesKey is. The table's
// map of series is keyed by it, viewing each series' own names: a copy of
// them in every key cost every series about 100 bytes, more for names past
// the small-string buffer. The viewed strings must outlive the key and not
// change (a Series' names are fixed, and the map holds it by pointer).
struct SeriesKeyRef {
  std::string_view device_id;
  std::string_view measure_name;
  std::string_view dimensions_key;

  SeriesKeyRef() = default;
  SeriesKeyRef(std::string_view device, std::string_view measure, std::string_view dimensions)
      : device_id(device), measure_name(measure), dimensions_key(dimensions) {}
  // Implicit: a map keyed by SeriesKeyRef is searched with a SeriesKey.
  SeriesKeyRef(const SeriesKey& key)  // NOLINT(google-explicit-constructor)
      : device_id(key.device_id), measure_name(key.measure_name), dimensions_key(key.dimensions_key) {}
  friend auto operator<=>(const SeriesKeyRef&, const SeriesKeyRef&) = default;
};

// Orders SeriesKeyRef and SeriesKey alike, so a map keyed by the former is
// searched with either.
struct SeriesKeyLess {
  using is_transparent = void;
  bool operator()(const SeriesKeyRef& a, const SeriesKeyRef& b) const { return a < b; }
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
