#include "engine/head/series_schema.h"

#include <algorithm>

#include "chunk/coding.h"

namespace cairn {

namespace {

// Appends a field to a schema key: length-prefixed name, then its type.
void AppendFieldKey(std::string* key, const ChunkField& field) {
  chunk_coding::PutLengthPrefixed(key, field.name);
  key->push_back(static_cast<char>(field.type));
}

}  // namespace

const std::shared_ptr<const SeriesSchema>& SeriesSchema::Empty() {
  static const auto* const empty = new std::shared_ptr<const SeriesSchema>(
      std::make_shared<const SeriesSchema>(std::vector<ChunkField>{}, std::string()));
  return *empty;
}

SeriesSchema::SeriesSchema(std::vector<ChunkField> fields, std::string key)
    : fields_(std::move(fields)), key_(std::move(key)) {
  if (fields_.size() > kScanFields) {
    by_name_.reserve(fields_.size());
    for (size_t i = 0; i < fields_.size(); ++i) by_name_.emplace(fields_[i].name, i);
  }
}

std::optional<size_t> SeriesSchema::Find(std::string_view name) const {
  if (fields_.size() > kScanFields) {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return std::nullopt;
    return it->second;
  }
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name == name) return i;
  }
  return std::nullopt;
}

std::shared_ptr<const SeriesSchema> SchemaPool::Extend(const SeriesSchema& base, const ChunkField& field) {
  std::string key = base.key();
  AppendFieldKey(&key, field);
  std::weak_ptr<const SeriesSchema>& slot = schemas_[key];
  if (std::shared_ptr<const SeriesSchema> held = slot.lock()) return held;
  std::vector<ChunkField> fields = base.fields();
  fields.push_back(field);
  auto schema = std::make_shared<const SeriesSchema>(std::move(fields), std::move(key));
  slot = schema;
  SweepIfGrown();
  return schema;
}

size_t SchemaPool::size() const {
  size_t live = 0;
  for (const auto& [key, schema] : schemas_) live += schema.expired() ? 0 : 1;
  return live;
}

void SchemaPool::SweepIfGrown() {
  if (schemas_.size() < sweep_at_) return;
  std::erase_if(schemas_, [](const auto& entry) { return entry.second.expired(); });
  sweep_at_ = std::max<size_t>(64, 2 * schemas_.size());
}

}  // namespace cairn
