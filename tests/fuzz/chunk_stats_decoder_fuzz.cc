// Fuzzes the chunk statistics decoder against a fixed schema with one field
// of every type. Properties: decoding fails with Corruption or succeeds, and
// what succeeds re-encodes to bytes that decode and re-encode identically.
// Each input is tried as given and with its checksum made valid.
#include <cstddef>
#include <cstdint>
#include <string>

#include "chunk_fuzz_support.h"

namespace cairn::fuzz {
namespace {

void CheckStats(std::string_view bytes, const std::vector<ChunkField>& schema) {
  Result<ChunkStats> decoded = DecodeChunkStats(bytes, schema);
  if (!decoded.ok()) {
    Require(decoded.status().Is(StatusCode::kCorruption), "decode failures are Corruption");
    return;
  }
  Require(decoded->fields.size() == schema.size(), "one FieldStats per field");
  std::string encoded = EncodeChunkStats(*decoded, schema);
  Result<ChunkStats> again = DecodeChunkStats(encoded, schema);
  Require(again.ok(), "re-encoded stats decode");
  Require(EncodeChunkStats(*again, schema) == encoded, "stats encoding is stable");
}

}  // namespace
}  // namespace cairn::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<cairn::ChunkField> schema = cairn::fuzz::StatsFuzzSchema();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  cairn::fuzz::CheckStats(input, schema);
  std::string fixed = cairn::fuzz::WithValidChecksum(input);
  if (!fixed.empty() && fixed != input) cairn::fuzz::CheckStats(fixed, schema);
  return 0;
}
