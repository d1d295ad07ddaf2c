#include "chunk/chunk_codec.h"

// Damaged and forged chunks: the decoder rejects them with a corruption
// status naming the problem, and never crashes or over-allocates.

#include <cstdint>
#include <numbers>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "chunk/coding.h"
#include "chunk/crc32c.h"
#include "chunk_codec_test_util.h"

namespace cairn::chunk_codec_testing {
namespace {

std::vector<ChunkRecord> SmallMixedRecords() {
  std::vector<ChunkRecord> records;
  for (int i = 0; i < 40; ++i) {
    Value state;
    if (i % 3 == 0) state = i % 2 ? std::string("idle") : std::string("r\0un", 4);
    double temperature = i == 7 ? -0.0 : i == 9 ? std::numbers::pi : 20.0 + i * 0.01;
    records.push_back(
        MakeRecord(1'700'000'000 * kSecond + i * kSecond + (i % 5) * kMillisecond,
                   {temperature, int64_t{i * i - 100}, i % 4 == 0, state, Timestamp{i * kSecond}},
                   i < 20 ? 1 : 2, i % 2 == 0 ? 0 : 1'800'000'000));
  }
  return records;
}

// Re-computes the trailing checksum so that a mutation reaches the parser.
void FixChecksum(std::string* chunk) {
  uint32_t crc = Crc32c(std::string_view(*chunk).substr(0, chunk->size() - 4));
  for (int i = 0; i < 4; ++i) (*chunk)[chunk->size() - 4 + i] = static_cast<char>(crc >> (8 * i));
}

// A decode that succeeds must yield a valid chunk: re-encodable and stable.
void ExpectValidIfDecoded(const Result<DecodedChunk>& decoded) {
  if (!decoded.ok()) {
    EXPECT_TRUE(decoded.status().Is(StatusCode::kCorruption)) << decoded.status().ToString();
    return;
  }
  std::vector<ChunkRecord> records;
  for (size_t i = 0; i < decoded->size(); ++i) records.push_back(decoded->RecordAt(i));
  std::vector<ChunkField> schema = decoded->Schema();
  Result<std::string> reencoded = EncodeChunk(schema, records, nullptr);
  ASSERT_TRUE(reencoded.ok()) << reencoded.status().ToString();
  Result<DecodedChunk> again = DecodeChunk(*reencoded);
  ASSERT_TRUE(again.ok());
  ExpectMatches(*again, schema, records);
}

TEST(ChunkCorruptionTest, EveryByteFlipIsRejectedByTheChecksum) {
  const std::string encoded = EncodeOrDie(kAllTypes, SmallMixedRecords());
  for (size_t i = 0; i < encoded.size(); ++i) {
    for (int mask : {0x01, 0x80, 0xFF}) {
      std::string damaged = encoded;
      damaged[i] = static_cast<char>(damaged[i] ^ mask);
      Result<DecodedChunk> decoded = DecodeChunk(damaged);
      ASSERT_FALSE(decoded.ok()) << "byte " << i << " mask " << mask;
      EXPECT_TRUE(decoded.status().Is(StatusCode::kCorruption));
    }
  }
}

TEST(ChunkCorruptionTest, EveryTruncationAndExtensionIsRejected) {
  const std::string encoded = EncodeOrDie(kAllTypes, SmallMixedRecords());
  for (size_t size = 0; size < encoded.size(); ++size) {
    Result<DecodedChunk> decoded = DecodeChunk(std::string_view(encoded).substr(0, size));
    ASSERT_FALSE(decoded.ok()) << "size " << size;
    EXPECT_TRUE(decoded.status().Is(StatusCode::kCorruption));
  }
  std::string extended = encoded + "x";
  EXPECT_FALSE(DecodeChunk(extended).ok());
}

// With the checksum fixed up, every mutation reaches the parser: it must
// reject or decode to a valid chunk, never crash or read out of bounds
// (ASan/UBSan builds check the latter).
TEST(ChunkCorruptionTest, MutationsPastTheChecksumNeverCrash) {
  const std::string encoded = EncodeOrDie(kAllTypes, SmallMixedRecords());
  size_t rejected = 0;
  for (size_t i = 0; i + 4 < encoded.size(); ++i) {
    for (int mask : {0x01, 0x40, 0xFF}) {
      std::string damaged = encoded;
      damaged[i] = static_cast<char>(damaged[i] ^ mask);
      FixChecksum(&damaged);
      Result<DecodedChunk> decoded = DecodeChunk(damaged);
      rejected += !decoded.ok();
      ExpectValidIfDecoded(decoded);
      ExpectValidIfDecoded(DecodeChunkFields(damaged, {"state", "count"}));
    }
  }
  EXPECT_GT(rejected, 0u);
  for (size_t size = 5; size < encoded.size(); ++size) {
    std::string truncated = encoded.substr(0, size);
    FixChecksum(&truncated);
    Result<DecodedChunk> decoded = DecodeChunk(truncated);
    EXPECT_FALSE(decoded.ok()) << "size " << size;
  }
}

// Builds a chunk by hand, for forged headers a real encoder never writes.
class ForgedChunk {
 public:
  ForgedChunk() { bytes_ = std::string("CK\x01", 3); }
  ForgedChunk& Varint(uint64_t v) {
    chunk_coding::PutVarint(&bytes_, v);
    return *this;
  }
  ForgedChunk& Bytes(std::string_view b) {
    bytes_.append(b);
    return *this;
  }
  std::string Finish() const {
    std::string out = bytes_;
    chunk_coding::PutFixed32(&out, Crc32c(out));
    return out;
  }

 private:
  std::string bytes_;
};

void ExpectCorruption(const std::string& chunk, std::string_view fragment) {
  Result<DecodedChunk> decoded = DecodeChunk(chunk);
  ASSERT_FALSE(decoded.ok());
  EXPECT_TRUE(decoded.status().Is(StatusCode::kCorruption));
  EXPECT_NE(decoded.status().message().find(fragment), std::string::npos) << decoded.status().ToString();
}

TEST(ChunkCorruptionTest, ForgedHeadersNameTheProblem) {
  ExpectCorruption("", "too short");
  std::string bad_crc = EncodeOrDie({}, {MakeRecord(1, {})});
  bad_crc.back() ^= 1;
  ExpectCorruption(bad_crc, "checksum mismatch");
  std::string bad_magic("XK\x01\x01\x00\x00", 6);
  chunk_coding::PutFixed32(&bad_magic, Crc32c(bad_magic));
  ExpectCorruption(bad_magic, "bad magic");
  std::string bad_version("CK\x02\x01\x00\x00", 6);
  chunk_coding::PutFixed32(&bad_version, Crc32c(bad_version));
  ExpectCorruption(bad_version, "format version 2");
  ExpectCorruption(ForgedChunk().Varint(0).Finish(), "record count 0");
  ExpectCorruption(ForgedChunk().Varint(kMaxChunkRecords + 1).Finish(), "record count");
  ExpectCorruption(ForgedChunk().Varint(1).Varint(kMaxChunkFields + 1).Finish(), "field count");
  ExpectCorruption(ForgedChunk().Varint(kMaxChunkRecords).Varint(5).Finish(), "cells");
  ExpectCorruption(ForgedChunk().Varint(1).Varint(1000).Bytes("x").Finish(), "bytes left");
  ExpectCorruption(ForgedChunk().Varint(1).Varint(1).Varint(1).Bytes("a").Bytes("\x09").Finish(),
                   "type code");
  ExpectCorruption(ForgedChunk().Varint(1).Varint(1).Varint(0).Bytes("\x01\x01\x01").Finish(), "name length");
  ExpectCorruption(
      ForgedChunk().Varint(1).Varint(2).Varint(1).Bytes("a\x01").Varint(1).Bytes("a\x02\x00").Finish(),
      "twice");
  ExpectCorruption(ForgedChunk().Varint(1).Varint(0).Bytes("\x04").Finish(), "flags");
  // Timestamps section longer than what is left.
  ExpectCorruption(ForgedChunk().Varint(1).Varint(0).Bytes(std::string(1, '\0')).Varint(100).Finish(),
                   "section");
  // Two records, second delta 0: not ascending.
  ExpectCorruption(ForgedChunk()
                       .Varint(2)
                       .Varint(0)
                       .Bytes(std::string(1, '\0'))
                       .Varint(6)
                       .Bytes(std::string("\x00\x02\x00\x01\x00\x01", 6))
                       .Finish(),
                   "ascending");
  // Two records: t0 = INT64_MAX - 1 then a step of 2.
  std::string overflow_body(1, '\0');
  chunk_coding::PutSignedVarint(&overflow_body, kMax - 1);
  overflow_body.append(std::string("\x00\x01\x04\x01", 4));  // one run: step 2
  ExpectCorruption(ForgedChunk()
                       .Varint(2)
                       .Varint(0)
                       .Bytes(std::string(1, '\0'))
                       .Varint(overflow_body.size())
                       .Bytes(overflow_body)
                       .Finish(),
                   "int64 range");
  // Scale 10^18 times a delta of 19 overflows 64 bits.
  std::string scaled_body("\x12", 1);
  chunk_coding::PutSignedVarint(&scaled_body, 0);
  scaled_body.append(std::string("\x00\x01\x26\x01", 4));
  ExpectCorruption(ForgedChunk()
                       .Varint(2)
                       .Varint(0)
                       .Bytes(std::string(1, '\0'))
                       .Varint(scaled_body.size())
                       .Bytes(scaled_body)
                       .Finish(),
                   "overflows");
}

TEST(ChunkCorruptionTest, ForgedColumnsNameTheProblem) {
  // One record, one string field; the column section is appended by each case.
  auto chunk_with_column = [](FieldType type, std::string_view column) {
    return ForgedChunk()
        .Varint(1)
        .Varint(1)
        .Varint(1)
        .Bytes("f")
        .Bytes(std::string(1, static_cast<char>(type)))
        .Bytes(std::string(1, '\0'))  // flags
        .Varint(2)
        .Bytes(std::string("\x00\x02", 2))  // timestamps: exponent 0, t0 = 1
        .Varint(column.size())
        .Bytes(column)
        .Finish();
  };
  ExpectCorruption(chunk_with_column(FieldType::kString, std::string("\x07", 1)), "presence mode");
  ExpectCorruption(chunk_with_column(FieldType::kString, std::string("\x00\x02\x00\x00", 4)),
                   "dictionary size");
  ExpectCorruption(chunk_with_column(FieldType::kString, std::string("\x00\x01\x80\x40", 4)), "exceeds 4096");
  ExpectCorruption(chunk_with_column(FieldType::kBool, std::string("\x00\x03", 2)), "padding");
  ExpectCorruption(chunk_with_column(FieldType::kBool, std::string("\x02\x03", 2)), "padding");
  ExpectCorruption(chunk_with_column(FieldType::kInt64, std::string("\x01\x00", 2)), "trailing");
  ExpectCorruption(chunk_with_column(FieldType::kInt64, std::string("\x03\x02\x00\x02", 4)), "presence run");
  ExpectCorruption(chunk_with_column(FieldType::kInt64, std::string("\x00\x01\x00\x41", 4)), "bit width 65");
  ExpectCorruption(chunk_with_column(FieldType::kDouble, std::string("\x00\x00\x13", 3)), "exponent 19");
  EXPECT_TRUE(DecodeChunk(chunk_with_column(FieldType::kBool, std::string("\x00\x01", 2))).ok());
  EXPECT_TRUE(DecodeChunk(chunk_with_column(FieldType::kBool, std::string("\x01", 1))).ok());
  EXPECT_TRUE(DecodeChunk(chunk_with_column(FieldType::kString, std::string("\x00\x01\x00", 3))).ok());
}

TEST(ChunkCorruptionTest, ForgedHugeExpansionsAreBounded) {
  // One run of a 4096-byte string repeated across the maximal record count
  // would decode to gigabytes; the string limit stops it.
  constexpr size_t kRecords = kMaxChunkCells;  // one field: cells == records
  static_assert(kRecords <= kMaxChunkRecords * 4);
  const size_t records = std::min(kMaxChunkRecords, kRecords);
  std::string column("\x00", 1);
  chunk_coding::PutVarint(&column, 1);
  chunk_coding::PutVarint(&column, kMaxStringValueBytes);
  column.append(kMaxStringValueBytes, 's');
  std::string timestamps(1, '\0');
  chunk_coding::PutSignedVarint(&timestamps, 0);
  timestamps.append(std::string("\x00\x01\x02", 3));  // one run of step 1
  chunk_coding::PutVarint(&timestamps, records - 1);
  std::string chunk = ForgedChunk()
                          .Varint(records)
                          .Varint(1)
                          .Varint(1)
                          .Bytes("s")
                          .Bytes(std::string(1, static_cast<char>(FieldType::kString)))
                          .Bytes(std::string(1, '\0'))
                          .Varint(timestamps.size())
                          .Bytes(timestamps)
                          .Varint(column.size())
                          .Bytes(column)
                          .Finish();
  ExpectCorruption(chunk, "string values exceed");
}

}  // namespace
}  // namespace cairn::chunk_codec_testing
