// Sync envelopes that were damaged or forged: every bit flip and cut, authentic
// but malformed binary and JSON, zstd bombs and malformed frames.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/sync/sync_envelope.h"

#include "sync_envelope_test_util.h"

namespace cairn::envelope_testing {
namespace {

TEST(SyncEnvelopeTest, EveryBitFlipAndTruncationIsRejected) {
  const std::vector<RecordRow> rows = {Row("pump-1", "env", kStart, {{"t", 21.5}, {"ok", true}}),
                                       Row("pump-1", "env", kStart + kSecond, {{"t", 21.25}})};
  auto decode = [](const std::string& payload) { return DecodeEnvelope(payload, kKey).status(); };
  for (EnvelopeEncoding encoding : {EnvelopeEncoding::kBinary, EnvelopeEncoding::kJson}) {
    const std::string payload = MustEncode(rows, encoding);
    ASSERT_TRUE(DecodeEnvelope(payload, kKey).ok());
    ExpectEveryBitFlipRejected(payload, decode);
    ExpectEveryTruncationRejected(payload, decode);
  }
}

TEST(SyncEnvelopeTest, AuthenticButMalformedBinaryIsCorruption) {
  Result<std::string> block = EncodeRecordBlock(std::vector<RecordRow>{Row("d", "m", kStart, {{"v", 1.0}})});
  ASSERT_TRUE(block.ok());
  struct Case {
    const char* what;
    RawEnvelope raw;
    StatusCode code;
  };
  std::vector<Case> cases;
  auto add = [&](const char* what, StatusCode code, auto change) {
    RawEnvelope raw;
    raw.stored = *block;
    change(raw);
    cases.push_back({what, raw, code});
  };
  add("valid", StatusCode::kOk, [](RawEnvelope&) {});
  add("unknown version", StatusCode::kInvalidArgument, [](RawEnvelope& r) { r.version = 2; });
  add("unknown codec", StatusCode::kInvalidArgument, [](RawEnvelope& r) { r.codec = 2; });
  add("unknown lane", StatusCode::kCorruption, [](RawEnvelope& r) { r.lane = 4; });
  add("flags set", StatusCode::kCorruption, [](RawEnvelope& r) { r.flags = 1; });
  add("reversed LSNs", StatusCode::kCorruption, [](RawEnvelope& r) { r.first_lsn = 2000; });
  add("no records", StatusCode::kCorruption, [](RawEnvelope& r) { r.record_count = 0; });
  add("count above the block's", StatusCode::kCorruption, [](RawEnvelope& r) { r.record_count = 2; });
  add("count above the LSN range", StatusCode::kCorruption, [](RawEnvelope& r) { r.record_count = 1001; });
  add("stored size too small", StatusCode::kCorruption, [](RawEnvelope& r) { r.stored_size = 3; });
  add("stored size too large", StatusCode::kCorruption, [](RawEnvelope& r) { r.stored_size = 1 << 20; });
  add("block size differs when stored", StatusCode::kCorruption, [](RawEnvelope& r) { r.block_size = 3; });
  add("gateway with a slash", StatusCode::kCorruption, [](RawEnvelope& r) { r.gateway_id = "a/b"; });
  add("empty table", StatusCode::kCorruption, [](RawEnvelope& r) { r.table = ""; });
  add("table with a space", StatusCode::kCorruption, [](RawEnvelope& r) { r.table = "a b"; });
  add("empty block", StatusCode::kCorruption, [](RawEnvelope& r) { r.stored = ""; });
  add("not a block", StatusCode::kCorruption, [](RawEnvelope& r) { r.stored = std::string("CR\1junk"); });
  add("a receipt's magic", StatusCode::kCorruption, [](RawEnvelope& r) { r.magic = "CRCP"; });
  add("records beyond the limit", StatusCode::kResourceExhausted, [](RawEnvelope& r) {
    r.record_count = 100'001;
    r.last_lsn = 1'000'000;
  });
  for (const Case& c : cases) {
    Status status = DecodeEnvelope(c.raw.Signed(), kKey).status();
    EXPECT_EQ(status.code(), c.code) << c.what << ": " << status.ToString();
  }
}

TEST(SyncEnvelopeTest, ZstdBombsAreRefusedBeforeAllocation) {
  // A frame claiming 1 GiB made of RLE blocks: a few bytes that would expand
  // into a gigabyte. The declared size is refused before anything is allocated.
  ZstdFrame bomb = ZstdFrame::WithContentSize(uint64_t{1} << 30);
  for (int i = 0; i < 8; ++i) bomb.Rle('\0', 128 * 1024, i == 7);
  RawEnvelope raw;
  raw.codec = 1;
  raw.stored = bomb.bytes();
  raw.block_size = int64_t{1} << 30;
  Status status = DecodeEnvelope(raw.Signed(), kKey).status();
  EXPECT_TRUE(status.Is(StatusCode::kResourceExhausted)) << status.ToString();

  // The header understates the size: the frame's own declaration disagrees.
  raw.block_size = 1000;
  status = DecodeEnvelope(raw.Signed(), kKey).status();
  EXPECT_TRUE(status.Is(StatusCode::kCorruption)) << status.ToString();

  // A 4 MiB expansion against a 1 MiB limit, and within an 8 MiB one (where
  // the zeros then fail as a record block).
  ZstdFrame zeros = ZstdFrame::WithContentSize(4 << 20);
  for (int i = 0; i < 32; ++i) zeros.Rle('\0', 128 * 1024, i == 31);
  raw.stored = zeros.bytes();
  raw.block_size = 4 << 20;
  EnvelopeLimits limits;
  limits.max_decoded_bytes = 1 << 20;
  status = DecodeEnvelope(raw.Signed(), kKey, limits).status();
  EXPECT_TRUE(status.Is(StatusCode::kResourceExhausted)) << status.ToString();
  limits.max_decoded_bytes = 8 << 20;
  status = DecodeEnvelope(raw.Signed(), kKey, limits).status();
  EXPECT_TRUE(status.Is(StatusCode::kCorruption)) << status.ToString();
  EXPECT_NE(status.message().find("record block"), std::string::npos) << status.ToString();
}

TEST(SyncEnvelopeTest, MalformedZstdFramesAreCorruption) {
  Result<std::string> block = EncodeRecordBlock(std::vector<RecordRow>{Row("d", "m", kStart, {{"v", 1.0}})});
  ASSERT_TRUE(block.ok());
  const std::string good = RawZstdFrame(*block);
  struct Case {
    const char* what;
    std::string frame;
    int64_t block_size;
  };
  const int64_t size = static_cast<int64_t>(block->size());
  const std::vector<Case> cases = {
      {"no content size", ZstdFrame::WithoutContentSize().Raw(*block, true).bytes(), size},
      {"trailing byte after the frame", good + '\0', size},
      {"two frames", good + good, size},
      {"truncated frame", good.substr(0, good.size() - 1), size},
      {"more output than declared", ZstdFrame::WithContentSize(100).Rle('x', 200, true).bytes(), 100},
      {"less output than declared", ZstdFrame::WithContentSize(300).Rle('x', 200, true).bytes(), 300},
      {"skippable frame", std::string("\x50\x2A\x4D\x18\x00\x00\x00\x00", 8) + good, size},
      {"not zstd", *block, size},
  };
  for (const Case& c : cases) {
    RawEnvelope raw;
    raw.codec = 1;
    raw.stored = c.frame;
    raw.block_size = c.block_size;
    Status status = DecodeEnvelope(raw.Signed(), kKey).status();
    EXPECT_TRUE(status.Is(StatusCode::kCorruption)) << c.what << ": " << status.ToString();
  }
}

TEST(SyncEnvelopeTest, AuthenticButMalformedJsonIsCorruption) {
  const std::string valid =
      Unsigned(MustEncode({Row("d", "m", kStart, {{"v", 1.0}})}, EnvelopeEncoding::kJson));
  ASSERT_TRUE(DecodeEnvelope(SignJson(valid), kKey).ok());
  auto replaced = [&](std::string_view from, std::string_view to) {
    std::string text = valid;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return text;
  };
  struct Case {
    const char* what;
    std::string text;
    StatusCode code;
  };
  const std::vector<Case> cases = {
      {"unknown member", replaced("\"table\"", "\"extra\":1,\"table\""), StatusCode::kCorruption},
      {"unknown record member", replaced("\"ttl\":0", "\"ttl\":0,\"tll\":0"), StatusCode::kCorruption},
      {"missing member", replaced("\"table\":\"sensors\",", ""), StatusCode::kCorruption},
      {"a receipt's type", replaced("cairn.sync.envelope", "cairn.sync.receipt"), StatusCode::kCorruption},
      {"unknown version", replaced("\"version\":1", "\"version\":2"), StatusCode::kInvalidArgument},
      {"unknown lane", replaced("\"live\"", "\"fast\""), StatusCode::kCorruption},
      {"count mismatch", replaced("\"record_count\":1", "\"record_count\":2"), StatusCode::kCorruption},
      {"fraction in an integer", replaced("\"timestamp\":1700000000000000000", "\"timestamp\":1.5"),
       StatusCode::kCorruption},
      {"exponent in an integer", replaced("\"first_lsn\":1000", "\"first_lsn\":1e3"),
       StatusCode::kCorruption},
      {"negative unsigned", replaced("\"version\":0", "\"version\":-1"), StatusCode::kCorruption},
      {"int64 overflow", replaced("\"timestamp\":1700000000000000000", "\"timestamp\":9223372036854775808"),
       StatusCode::kCorruption},
      {"untyped value", replaced("{\"double\":1}", "1"), StatusCode::kCorruption},
      {"unknown value type", replaced("{\"double\":1}", "{\"float\":1}"), StatusCode::kCorruption},
      {"two types", replaced("{\"double\":1}", "{\"double\":1,\"int64\":1}"), StatusCode::kCorruption},
      {"type mismatch", replaced("{\"double\":1}", "{\"bool\":1}"), StatusCode::kCorruption},
      {"no fields", replaced("{\"v\":{\"double\":1}}", "{}"), StatusCode::kCorruption},
      {"control character in device", replaced("\"device_id\":\"d\"", "\"device_id\":\"d\\u0001\""),
       StatusCode::kCorruption},
      {"negative ttl", replaced("\"ttl\":0", "\"ttl\":-1"), StatusCode::kCorruption},
      {"duplicate member", replaced("\"ttl\":0", "\"ttl\":0,\"ttl\":0"), StatusCode::kCorruption},
      {"not JSON", replaced("\"records\":[", "\"records\":[[[}"), StatusCode::kCorruption},
      {"older gateway's dimensions of a series without records",
       replaced("\"record_count\"",
                "\"dimensions\":[{\"device_id\":\"x\",\"measure_name\":\"m\",\"dimensions\":{\"a\":\"b\"}}],"
                "\"record_count\""),
       StatusCode::kCorruption},
      {"older gateway's empty dimensions object",
       replaced("\"record_count\"",
                "\"dimensions\":[{\"device_id\":\"d\",\"measure_name\":\"m\",\"dimensions\":{}}],\"record_"
                "count\""),
       StatusCode::kCorruption},
      {"record dimensions not an object", replaced("\"shard\":0", "\"shard\":0,\"dimensions\":[]"),
       StatusCode::kCorruption},
      {"record dimension not a string", replaced("\"shard\":0", "\"shard\":0,\"dimensions\":{\"a\":1}"),
       StatusCode::kCorruption},
      {"control character in an attribute",
       replaced("\"shard\":0", "\"shard\":0,\"attributes\":{\"a\":\"x\\u0001\"}"), StatusCode::kCorruption},
  };
  for (const Case& c : cases) {
    Status status = DecodeEnvelope(SignJson(c.text), kKey).status();
    EXPECT_EQ(status.code(), c.code) << c.what << ": " << status.ToString();
  }
  // An older gateway's dimensions list for records that carry their own.
  std::string both = replaced("\"shard\":0", "\"shard\":0,\"dimensions\":{\"a\":\"c\"}");
  both.replace(both.find("\"record_count\""), 0,
               "\"dimensions\":[{\"device_id\":\"d\",\"measure_name\":\"m\",\"dimensions\":{\"a\":\"b\"}}],");
  ASSERT_TRUE(
      DecodeEnvelope(SignJson(replaced("\"shard\":0", "\"shard\":0,\"dimensions\":{\"a\":\"c\"}")), kKey)
          .ok());
  EXPECT_TRUE(DecodeEnvelope(SignJson(both), kKey).status().Is(StatusCode::kCorruption));
  // A JSON message must end with the trailer, exactly.
  EXPECT_TRUE(DecodeEnvelope(SignJson(valid) + "\n", kKey).status().Is(StatusCode::kCorruption));
  EXPECT_TRUE(DecodeEnvelope(valid, kKey).status().Is(StatusCode::kCorruption));
}

}  // namespace
}  // namespace cairn::envelope_testing
