// The record codec's block format as bytes: truncations and bit flips of
// an encoded block, and blocks built by hand per envelope_format.md §4,
// of both versions and malformed in every field.
#include "cairn/core/record_codec.h"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chunk/chunk_codec.h"
#include "chunk/coding.h"
#include "chunk/integer_sequence.h"
#include "chunk_record_codec_test_util.h"

namespace cairn::record_codec_testing {
namespace {

std::string SampleBlock() {
  std::vector<RecordRow> rows = {
      Row("pump-1", "env", kStart, {{"temperature", 21.5}, {"ok", true}}, 1, 1'800'000'000),
      Row("pump-1", "env", kStart + kSecond, {{"temperature", 21.25}, {"label", std::string("x")}}),
      Row("pump-2", "env", kStart, {{"count", int64_t{-4}}}, 0, 0, 2),
  };
  rows[2].dimensions = {{"site", "north"}};
  rows[2].attributes = {{"firmware", "7"}};
  Result<std::string> bytes = EncodeRecordBlock(rows);
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? *bytes : std::string();
}

TEST(RecordCodecTest, EveryTruncationIsCorruption) {
  const std::string bytes = SampleBlock();
  ASSERT_FALSE(bytes.empty());
  for (size_t size = 0; size < bytes.size(); ++size) {
    Status status = DecodeRecordBlock(std::string_view(bytes).substr(0, size)).status();
    EXPECT_TRUE(status.Is(StatusCode::kCorruption)) << "size " << size << ": " << status.ToString();
  }
  EXPECT_TRUE(DecodeRecordBlock(bytes + '\0').status().Is(StatusCode::kCorruption));
}

TEST(RecordCodecTest, BitFlipsNeverCrashAndAreMostlyCaught) {
  // The block has no checksum of its own (the envelope's MAC covers it), so a
  // flip inside an identifier can yield another valid block. Every flip must
  // still decode cleanly or fail with a status.
  const std::string bytes = SampleBlock();
  size_t rejected = 0;
  for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    std::string flipped = bytes;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    Result<RecordBlock> block = DecodeRecordBlock(flipped);
    if (!block.ok()) {
      ++rejected;
      EXPECT_TRUE(block.status().Is(StatusCode::kCorruption) ||
                  block.status().Is(StatusCode::kInvalidArgument) ||
                  block.status().Is(StatusCode::kResourceExhausted))
          << block.status().ToString();
    }
  }
  // Chunk bytes are CRC-protected; only identifier and count bits can slip.
  EXPECT_GT(rejected, bytes.size() * 8 * 3 / 4);
}

// Builds blocks by hand, per envelope_format.md §4.
class BlockBuilder {
 public:
  BlockBuilder& Magic(std::string_view magic = "CR", uint8_t version = 2) {
    bytes_.append(magic);
    bytes_.push_back(static_cast<char>(version));
    return *this;
  }
  BlockBuilder& Varint(uint64_t value) {
    chunk_coding::PutVarint(&bytes_, value);
    return *this;
  }
  BlockBuilder& Text(std::string_view text) {
    Varint(text.size());
    bytes_.append(text);
    return *this;
  }
  BlockBuilder& Raw(std::string_view bytes) {
    bytes_.append(bytes);
    return *this;
  }
  BlockBuilder& Series(std::string_view device, std::string_view measure, uint64_t shard) {
    return Text(device).Text(measure).Varint(shard);
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

std::string OneChunk(const std::vector<ChunkField>& schema, const std::vector<ChunkRecord>& records) {
  Result<std::string> chunk = EncodeChunk(schema, records, nullptr);
  EXPECT_TRUE(chunk.ok()) << chunk.status().ToString();
  return chunk.ok() ? *chunk : std::string();
}

TEST(RecordCodecTest, HandBuiltBlockDecodes) {
  const std::string chunk = OneChunk({{"v", FieldType::kDouble}}, {{kStart, 0, 0, {Value(1.5)}}});
  BlockBuilder builder;
  builder.Magic()
      .Varint(1)
      .Series("d", "m", 7)
      .Varint(1)
      .Text("site")
      .Text("n")
      .Varint(1)
      .Text("fw")
      .Text("2")
      .Varint(1)
      .Text(chunk);
  std::string lsns;
  chunk_coding::EncodeIntegerSequence(std::vector<int64_t>{9}, &lsns);
  builder.Raw(lsns);
  Result<RecordBlock> block = DecodeRecordBlock(builder.bytes());
  ASSERT_TRUE(block.ok()) << block.status().ToString();
  ExpectSameTaggedRows({Tagged(Row("d", "m", kStart, {{"v", 1.5}}, 0, 0, 7), {{"site", "n"}}, {{"fw", "2"}})},
                       block->records);
  EXPECT_EQ(block->records[0].lsn, 9u);
}

// The previous release's gateways send version 1 blocks: no attribute list,
// and their dimensions (then metadata) are read as the series' identity.
TEST(RecordCodecTest, Version1BlockDecodesWithItsDimensionsAsIdentity) {
  const std::string chunk = OneChunk({{"v", FieldType::kDouble}}, {{kStart, 0, 0, {Value(1.5)}}});
  const std::string later = OneChunk({{"v", FieldType::kDouble}}, {{kStart, 0, 0, {Value(2.5)}}});
  BlockBuilder builder;
  builder.Magic("CR", 1)
      .Varint(2)
      .Series("d", "m", 7)
      .Varint(1)
      .Text("site")
      .Text("n")
      .Varint(1)
      .Text(chunk)
      .Series("e", "m", 0)
      .Varint(0)
      .Varint(1)
      .Text(later);
  Result<RecordBlock> block = DecodeRecordBlock(builder.bytes());
  ASSERT_TRUE(block.ok()) << block.status().ToString();
  ExpectSameTaggedRows({Tagged(Row("d", "m", kStart, {{"v", 1.5}}, 0, 0, 7), {{"site", "n"}}),
                        Row("e", "m", kStart, {{"v", 2.5}})},
                       block->records);
  // Re-encoded, it is a version 2 block with the same content.
  Result<std::string> again = EncodeRecordBlock(block->records);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)[2], '\x02');
  Result<RecordBlock> redecoded = DecodeRecordBlock(*again);
  ASSERT_TRUE(redecoded.ok()) << redecoded.status().ToString();
  ExpectSameTaggedRows(block->records, redecoded->records);
  EXPECT_EQ(block->records[0].lsn, 0u);  // version 1 carries no LSNs
}

// Version 2: each chunk is followed by its records' LSNs.
TEST(RecordCodecTest, Version2ChunksCarryTheirRecordsLsns) {
  const std::string chunk = OneChunk({{"v", FieldType::kDouble}}, {{kStart, 0, 0, {Value(1.5)}}});
  std::string lsns;
  chunk_coding::EncodeIntegerSequence(std::vector<int64_t>{42}, &lsns);
  BlockBuilder v2;
  v2.Magic("CR", 2).Varint(1).Series("d", "m", 7).Varint(0).Varint(0).Varint(1).Text(chunk);
  Result<RecordBlock> with_lsns = DecodeRecordBlock(v2.bytes() + lsns);
  ASSERT_TRUE(with_lsns.ok()) << with_lsns.status().ToString();
  EXPECT_EQ(with_lsns->records[0].lsn, 42u);
  EXPECT_TRUE(DecodeRecordBlock(v2.bytes()).status().Is(StatusCode::kCorruption)) << "LSNs missing";
}

TEST(RecordCodecTest, RejectsMalformedBlocks) {
  const std::string chunk = OneChunk({{"v", FieldType::kDouble}}, {{kStart, 0, 0, {Value(1.5)}}});
  const std::string int_chunk =
      OneChunk({{"v", FieldType::kInt64}}, {{kStart + 1, 0, 0, {Value(int64_t{1})}}});
  const std::string empty_record_chunk = OneChunk({{"v", FieldType::kDouble}}, {{kStart, 0, 0, {Value()}}});
  const std::string negative_ttl_chunk =
      OneChunk({{"v", FieldType::kDouble}}, {{kStart, 0, -5, {Value(1.0)}}});
  // Two chunks of 600 fields each, no name shared: 1200 in the series.
  auto wide_chunk = [](const std::string& prefix, int64_t timestamp) {
    std::vector<ChunkField> schema;
    for (int f = 0; f < 600; ++f) schema.push_back({prefix + std::to_string(f), FieldType::kDouble});
    ChunkRecord record{timestamp, 0, 0, std::vector<Value>(schema.size())};
    record.values[0] = 1.0;
    return OneChunk(schema, {record});
  };
  const std::string wide_a = wide_chunk("a", kStart);
  const std::string wide_b = wide_chunk("b", kStart + 1);
  struct Case {
    const char* what;
    std::string bytes;
    StatusCode code;
  };
  // Version 1 blocks, whose series have no attribute list; the checks are
  // the same for both versions.
  auto block = [] { return BlockBuilder().Magic("CR", 1); };
  auto block2 = [] { return BlockBuilder().Magic("CR", 2); };
  std::string one_lsn;  // what follows each chunk of a version 2 block
  chunk_coding::EncodeIntegerSequence(std::vector<int64_t>{7}, &one_lsn);
  const std::vector<Case> cases = {
      {"bad magic", BlockBuilder().Magic("CK").Varint(0).bytes(), StatusCode::kCorruption},
      {"unknown version", BlockBuilder().Magic("CR", 3).Varint(0).bytes(), StatusCode::kInvalidArgument},
      {"version 0", BlockBuilder().Magic("CR", 0).Varint(0).bytes(), StatusCode::kInvalidArgument},
      {"duplicate series with the same dimensions",
       block2()
           .Varint(2)
           .Series("d", "m", 0)
           .Varint(1)
           .Text("s")
           .Text("a")
           .Varint(0)
           .Varint(1)
           .Text(chunk)
           .Raw(one_lsn)
           .Series("d", "m", 0)
           .Varint(1)
           .Text("s")
           .Text("a")
           .Varint(1)
           .Text("fw")
           .Text("1")
           .Varint(1)
           .Text(chunk)
           .Raw(one_lsn)
           .bytes(),
       StatusCode::kCorruption},
      {"attributes out of order",
       block2()
           .Varint(1)
           .Series("d", "m", 0)
           .Varint(0)
           .Varint(2)
           .Text("z")
           .Text("1")
           .Text("a")
           .Text("2")
           .Varint(1)
           .Text(chunk)
           .bytes(),
       StatusCode::kCorruption},
      {"too many attributes",
       block2().Varint(1).Series("d", "m", 0).Varint(0).Varint(kMaxDimensionsPerSeries + 1).bytes(),
       StatusCode::kCorruption},
      {"control character in an attribute value",
       block2()
           .Varint(1)
           .Series("d", "m", 0)
           .Varint(0)
           .Varint(1)
           .Text("fw")
           .Text("a\x01")
           .Varint(1)
           .Text(chunk)
           .bytes(),
       StatusCode::kCorruption},
      {"truncated attribute count", block2().Varint(1).Series("d", "m", 0).Varint(0).bytes(),
       StatusCode::kCorruption},
      {"series without chunks", block().Varint(1).Series("d", "m", 0).Varint(0).Varint(0).bytes(),
       StatusCode::kCorruption},
      {"duplicate series",
       block()
           .Varint(2)
           .Series("d", "m", 0)
           .Varint(0)
           .Varint(1)
           .Text(chunk)
           .Series("d", "m", 0)
           .Varint(0)
           .Varint(1)
           .Text(chunk)
           .bytes(),
       StatusCode::kCorruption},
      {"field changes type",
       block().Varint(1).Series("d", "m", 0).Varint(0).Varint(2).Text(chunk).Text(int_chunk).bytes(),
       StatusCode::kCorruption},
      {"record without fields",
       block().Varint(1).Series("d", "m", 0).Varint(0).Varint(1).Text(empty_record_chunk).bytes(),
       StatusCode::kCorruption},
      {"negative ttl",
       block().Varint(1).Series("d", "m", 0).Varint(0).Varint(1).Text(negative_ttl_chunk).bytes(),
       StatusCode::kCorruption},
      {"empty device", block().Varint(1).Series("", "m", 0).Varint(0).Varint(1).Text(chunk).bytes(),
       StatusCode::kCorruption},
      {"control character in measure",
       block().Varint(1).Series("d", "m\x01", 0).Varint(0).Varint(1).Text(chunk).bytes(),
       StatusCode::kCorruption},
      {"shard beyond int32",
       block().Varint(1).Series("d", "m", uint64_t{1} << 31).Varint(0).Varint(1).Text(chunk).bytes(),
       StatusCode::kCorruption},
      {"dimensions out of order",
       block()
           .Varint(1)
           .Series("d", "m", 0)
           .Varint(2)
           .Text("z")
           .Text("1")
           .Text("a")
           .Text("2")
           .Varint(1)
           .Text(chunk)
           .bytes(),
       StatusCode::kCorruption},
      {"too many dimensions",
       block().Varint(1).Series("d", "m", 0).Varint(kMaxDimensionsPerSeries + 1).bytes(),
       StatusCode::kCorruption},
      {"not a chunk", block().Varint(1).Series("d", "m", 0).Varint(0).Varint(1).Text("CKjunk").bytes(),
       StatusCode::kCorruption},
      {"chunk length past the end",
       block().Varint(1).Series("d", "m", 0).Varint(0).Varint(1).Varint(1000).bytes(),
       StatusCode::kCorruption},
      {"more than 1024 fields in a series",
       block().Varint(1).Series("d", "m", 0).Varint(0).Varint(2).Text(wide_a).Text(wide_b).bytes(),
       StatusCode::kCorruption},
      {"more series than the record limit", block().Varint(200'000).bytes(), StatusCode::kResourceExhausted},
      {"trailing bytes", block().Varint(0).Varint(0).bytes(), StatusCode::kCorruption},
  };
  for (const Case& c : cases) {
    Status status = DecodeRecordBlock(c.bytes).status();
    EXPECT_EQ(status.code(), c.code) << c.what << ": " << status.ToString();
  }
}

}  // namespace
}  // namespace cairn::record_codec_testing
