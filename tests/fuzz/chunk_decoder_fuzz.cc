// Fuzzes the chunk decoder. Properties, for any input:
// - DecodeChunk either fails with Corruption or yields a valid chunk;
// - a decoded chunk re-encodes, and decoding that gives the same chunk;
// - DecodeChunkFields agrees with DecodeChunk on the columns it returns;
// - DecodeChunkTyped fails exactly when DecodeChunk does and otherwise holds
//   the same values in its typed columns;
// - the chunk's statistics survive their own serialisation.
// Each input is tried as given and with its checksum made valid, so that
// mutations reach the parser behind the CRC.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chunk_fuzz_support.h"

namespace cairn::fuzz {
namespace {

void RequireSameColumn(const ChunkColumn& a, const ChunkColumn& b) {
  Require(a.field == b.field, "column fields equal");
  Require(a.present == b.present, "presence equal");
  Require(a.values.size() == b.values.size(), "column sizes equal");
  for (size_t i = 0; i < a.values.size(); ++i) {
    Require(SameValue(a.values[i], b.values[i]), "values equal");
    Require((a.present[i] != 0) == !std::holds_alternative<std::monostate>(a.values[i]),
            "presence matches value");
  }
}

void RequireSameChunk(const DecodedChunk& a, const DecodedChunk& b) {
  Require(a.timestamps == b.timestamps, "timestamps equal");
  Require(a.versions == b.versions, "versions equal");
  Require(a.ttls == b.ttls, "ttls equal");
  Require(a.columns.size() == b.columns.size(), "column counts equal");
  for (size_t c = 0; c < a.columns.size(); ++c) RequireSameColumn(a.columns[c], b.columns[c]);
}

void RequireSameAsTyped(const DecodedChunk& values, const DecodedChunk& typed) {
  Require(values.timestamps == typed.timestamps, "typed timestamps equal");
  Require(values.versions == typed.versions && values.ttls == typed.ttls, "typed versions and ttls equal");
  Require(values.columns.size() == typed.columns.size(), "typed column counts equal");
  for (size_t c = 0; c < values.columns.size(); ++c) {
    const ValueColumn& column = typed.columns[c].typed;
    Require(column.present == values.columns[c].present, "typed presence equal");
    for (size_t i = 0; i < column.size(); ++i) {
      Require(SameValue(column.ValueAt(i), values.columns[c].values[i]), "typed values equal");
    }
  }
}

void CheckChunk(std::string_view bytes) {
  Result<DecodedChunk> decoded = DecodeChunk(bytes);
  Result<DecodedChunk> typed = DecodeChunkTyped(bytes, nullptr);
  Require(decoded.ok() == typed.ok(), "typed decode fails exactly when decode does");
  if (decoded.ok()) RequireSameAsTyped(*decoded, *typed);
  if (!decoded.ok()) {
    Require(decoded.status().Is(StatusCode::kCorruption), "decode failures are Corruption");
    return;
  }
  const std::vector<ChunkField> schema = decoded->Schema();
  Require(!decoded->timestamps.empty(), "at least one record");
  for (size_t i = 1; i < decoded->size(); ++i) {
    Require(decoded->timestamps[i - 1] < decoded->timestamps[i], "timestamps strictly ascending");
  }
  // Huge expansions (a few bytes of runs can stand for millions of cells) are
  // checked by the decode above; round-tripping them would only slow the
  // fuzzer down and risk its memory limit.
  constexpr size_t kMaxRoundTripCells = size_t{1} << 16;
  if (decoded->size() * std::max<size_t>(1, schema.size()) > kMaxRoundTripCells) return;

  std::vector<ChunkRecord> records;
  records.reserve(decoded->size());
  for (size_t i = 0; i < decoded->size(); ++i) records.push_back(decoded->RecordAt(i));

  ChunkStats stats;
  Result<std::string> reencoded = EncodeChunk(schema, records, &stats);
  Require(reencoded.ok(), "a decoded chunk re-encodes");
  Result<DecodedChunk> again = DecodeChunk(*reencoded);
  Require(again.ok(), "a re-encoded chunk decodes");
  RequireSameChunk(*decoded, *again);

  if (!schema.empty()) {
    Result<DecodedChunk> partial = DecodeChunkFields(bytes, {schema.back().name});
    Require(partial.ok(), "partial decode succeeds where full decode does");
    Require(partial->columns.size() == 1, "partial decode returns the requested column");
    Require(partial->timestamps == decoded->timestamps, "partial timestamps equal");
    RequireSameColumn(partial->columns[0], decoded->columns.back());
  }

  std::string stats_bytes = EncodeChunkStats(stats, schema);
  Result<ChunkStats> stats_again = DecodeChunkStats(stats_bytes, schema);
  Require(stats_again.ok(), "encoded stats decode");
  Require(EncodeChunkStats(*stats_again, schema) == stats_bytes, "stats round trip");
}

}  // namespace
}  // namespace cairn::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  cairn::fuzz::CheckChunk(input);
  std::string fixed = cairn::fuzz::WithValidChecksum(input);
  if (!fixed.empty() && fixed != input) cairn::fuzz::CheckChunk(fixed);
  return 0;
}
