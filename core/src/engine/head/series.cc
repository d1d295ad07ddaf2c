#include "engine/head/series.h"

#include "chunk/coding.h"

namespace cairn {

using chunk_coding::ByteReader;
using chunk_coding::PutLengthPrefixed;
using chunk_coding::PutVarint;

std::string EncodeTagMap(const TagMap& tags) {
  std::string out;
  PutVarint(&out, tags.size());
  for (const auto& [name, value] : tags) {
    PutLengthPrefixed(&out, name);
    PutLengthPrefixed(&out, value);
  }
  return out;
}

Result<TagMap> DecodeTagMap(std::string_view bytes) {
  ByteReader reader(bytes);
  uint64_t count;
  if (!reader.ReadVarint(&count) || count > reader.remaining()) return Status::Corruption("bad tag set");
  TagMap tags;
  for (uint64_t i = 0; i < count; ++i) {
    std::string name, value;
    if (!reader.ReadLengthPrefixed(&name) || !reader.ReadLengthPrefixed(&value)) return Status::Corruption("bad tag set");
    // The encoding is canonical (names ascending, each once): anything else
    // would give one tag set two keys.
    if (!tags.empty() && !(tags.rbegin()->first < name)) return Status::Corruption("bad tag set: unsorted");
    tags.emplace_hint(tags.end(), std::move(name), std::move(value));
  }
  if (!reader.empty()) return Status::Corruption("bad tag set: trailing bytes");
  return tags;
}

void SplitTags(const TableOptions& options, const TagMap& tags, TagMap* dimensions, TagMap* attributes) {
  dimensions->clear();
  attributes->clear();
  for (const auto& [name, value] : tags) {
    TagMap* into = options.attributes.count(name) ? attributes : dimensions;
    into->emplace_hint(into->end(), name, value);
  }
}

}  // namespace cairn
