// Shared helpers of the sync envelope, receipt and topic tests: batches of
// every value type, signing and hand-built payloads (binary, JSON, zstd
// frames) that follow sync_envelope.md byte by byte, and the checks that
// every bit flip and every cut of a payload is rejected.
#pragma once

#include <algorithm>
#include <bit>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/platform/crypto.h"
#include "cairn/sync/sync_envelope.h"

#include "record_rows.h"

namespace cairn::envelope_testing {

using test_rows::DescribeRow;
using test_rows::ExpectSameRows;
using test_rows::Row;
using test_rows::SameRow;
using test_rows::SameValue;

constexpr int64_t kMinInt64 = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kMillisecond = 1'000'000;
constexpr int64_t kStart = 1'700'000'000 * kSecond;
constexpr std::string_view kKey = "gateway-7 secret key, 32 bytes!!";
constexpr std::string_view kOtherKey = "another gateway's key, 32 bytes!";

inline EnvelopeHeader Header(uint64_t first_lsn = 1000, uint64_t last_lsn = 1999,
                             SyncLane lane = SyncLane::kLive) {
  return EnvelopeHeader{"gw-7", "sensors", lane, 42, first_lsn, last_lsn};
}

inline std::vector<RecordRow> WithSortedFields(std::vector<RecordRow> rows) {
  for (RecordRow& row : rows) {
    std::stable_sort(row.fields.begin(), row.fields.end(),
                     [](const Field& a, const Field& b) { return a.name < b.name; });
  }
  return rows;
}

// `row` with these dimensions and attributes.
inline RecordRow Tagged(RecordRow row, TagMap dimensions, TagMap attributes = {}) {
  row.dimensions = std::move(dimensions);
  row.attributes = std::move(attributes);
  return row;
}

// ExpectSameRows, dimensions and attributes included.
inline void ExpectSameTaggedRows(const std::vector<RecordRow>& expected,
                                 const std::vector<RecordRow>& actual) {
  ExpectSameRows(expected, actual);
  for (size_t i = 0; i < std::min(expected.size(), actual.size()); ++i) {
    EXPECT_EQ(expected[i].dimensions, actual[i].dimensions) << "row " << i << " " << DescribeRow(expected[i]);
    EXPECT_EQ(expected[i].attributes, actual[i].attributes) << "row " << i << " " << DescribeRow(expected[i]);
  }
}

// The binary order (record_codec.h): series (device, measure, shard,
// dimensions) by first appearance, then by timestamp, ties in input order;
// every record with its series' last attributes.
inline std::vector<RecordRow> InBlockOrder(std::vector<RecordRow> rows) {
  using SeriesKey = std::tuple<std::string, std::string, int, TagMap>;
  std::map<SeriesKey, size_t> first_seen;
  std::map<SeriesKey, TagMap> attributes;
  for (const RecordRow& row : rows) {
    const SeriesKey key(row.device_id, row.measure_name, row.shard, row.dimensions);
    first_seen.emplace(key, first_seen.size());
    attributes[key] = row.attributes;
  }
  for (RecordRow& row : rows)
    row.attributes = attributes.at({row.device_id, row.measure_name, row.shard, row.dimensions});
  rows = WithSortedFields(std::move(rows));
  std::stable_sort(rows.begin(), rows.end(), [&](const RecordRow& a, const RecordRow& b) {
    const size_t series_a = first_seen.at(SeriesKey(a.device_id, a.measure_name, a.shard, a.dimensions));
    const size_t series_b = first_seen.at(SeriesKey(b.device_id, b.measure_name, b.shard, b.dimensions));
    if (series_a != series_b) return series_a < series_b;
    return a.timestamp < b.timestamp;
  });
  return rows;
}

// Every field type, the extremes of each, and identifiers beyond ASCII.
inline std::vector<RecordRow> AllTypesBatch() {
  return {
      Row("pump-7", "env#temperature", kStart, {{"value", 21.5}, {"ok", true}}, 0, 1'800'000'000),
      Tagged(Row("Gerät-ü", "温度#室内", kStart + 1,
                 {{"état", std::string("fermé\n\"quoted\" \\ \x01")}, {"📈", -0.0}}),
             {{"ort", "Zürich"}}, {{"firmware", "2.1 \"beta\""}}),
      Row("pump-7", "env#temperature", kStart + kSecond, {{"value", 21.25}, {"label", std::string()}}),
      // 1677-09-21 and 2262-04-11: the ends of int64 nanoseconds.
      Row("edge", "time", kMinInt64, {{"min", kMinInt64}, {"at", Timestamp{kMaxInt64}}},
          std::numeric_limits<uint64_t>::max(), kMaxInt64),
      Row("edge", "time", kMaxInt64, {{"max", kMaxInt64}, {"at", Timestamp{kMinInt64}}}, 1),
      Row("edge", "doubles", 0,
          {{"max", DBL_MAX},
           {"lowest", -DBL_MAX},
           {"tiny", DBL_TRUE_MIN},
           {"tenth", 0.1},
           {"third", 1.0 / 3},
           {"big", 1e300},
           {"integral", 42.0}}),
      Tagged(Row("pump-7", "env#temperature", kStart, {{"value", 99.0}}, 3, 0, /*shard=*/13),
             {{"site", "north"}, {"rack", ""}}, {{"owner", "ops"}}),
      Row("pump-7", "env#temperature", kStart, {{"value", 21.75}}, 1),  // a rewrite of the first record
      // The first record's identity but another sensor: another series.
      Tagged(Row("pump-7", "env#temperature", kStart, {{"value", 5.5}}), {{"sensor", "b"}}),
      // The same series as the Gerät-ü record, with newer attributes.
      Tagged(Row("Gerät-ü", "温度#室内", kStart + 2, {{"état", std::string("ouvert")}}), {{"ort", "Zürich"}},
             {{"firmware", "2.2"}}),
  };
}

inline Result<DecodedEnvelope> EncodeDecode(const std::vector<RecordRow>& rows, EnvelopeEncoding encoding) {
  Result<std::string> payload = EncodeEnvelope(Header(), rows, kKey, encoding);
  if (!payload.ok()) return payload.status();
  return DecodeEnvelope(*payload, kKey);
}

inline std::string MustEncode(const std::vector<RecordRow>& rows, EnvelopeEncoding encoding,
                              const EnvelopeHeader& header = Header()) {
  Result<std::string> payload = EncodeEnvelope(header, rows, kKey, encoding);
  EXPECT_TRUE(payload.ok()) << payload.status().ToString();
  return payload.ok() ? *payload : std::string();
}

inline std::string Sign(std::string_view bytes, std::string_view key = kKey) {
  const Sha256Digest mac = HmacSha256(key, bytes);
  return std::string(bytes) + std::string(reinterpret_cast<const char*>(mac.data()), mac.size());
}

inline std::string LowerHex(const Sha256Digest& digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  for (uint8_t byte : digest) {
    text.push_back(kDigits[byte >> 4]);
    text.push_back(kDigits[byte & 0xF]);
  }
  return text;
}

// Signs a complete JSON object as envelope_format.md §5 says.
inline std::string SignJson(std::string object, std::string_view key = kKey) {
  object.pop_back();
  return object + ",\"mac\":\"" + LowerHex(HmacSha256(key, object)) + "\"}";
}

// The JSON text of a signed JSON message, without its signature trailer.
inline std::string Unsigned(const std::string& payload) {
  return payload.substr(0, payload.size() - 74) + "}";
}

inline void PutLittleEndian(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(value >> (8 * i)));
}

// A binary envelope written from envelope_format.md §3 alone.
struct RawEnvelope {
  std::string magic = "CSYN";
  uint8_t version = 1;
  uint8_t codec = 0;
  uint8_t lane = 0;
  uint8_t flags = 0;
  uint64_t batch_sequence = 42;
  uint64_t first_lsn = 1000;
  uint64_t last_lsn = 1999;
  uint32_t record_count = 1;
  std::string gateway_id = "gw-7";
  std::string table = "sensors";
  std::string stored;
  int64_t stored_size = -1;  // -1: stored.size()
  int64_t block_size = -1;   // -1: stored.size()

  std::string Bytes() const {
    std::string out = magic;
    for (uint8_t byte : {version, codec, lane, flags}) out.push_back(static_cast<char>(byte));
    PutLittleEndian(&out, batch_sequence, 8);
    PutLittleEndian(&out, first_lsn, 8);
    PutLittleEndian(&out, last_lsn, 8);
    PutLittleEndian(&out, record_count, 4);
    PutLittleEndian(&out, stored_size < 0 ? stored.size() : static_cast<uint64_t>(stored_size), 4);
    PutLittleEndian(&out, block_size < 0 ? stored.size() : static_cast<uint64_t>(block_size), 4);
    out.push_back(static_cast<char>(gateway_id.size()));
    out += gateway_id;
    out.push_back(static_cast<char>(table.size()));
    out += table;
    return out + stored;
  }
  std::string Signed(std::string_view key = kKey) const { return Sign(Bytes(), key); }
};

// zstd frames written from RFC 8878 alone: a frame header declaring
// `content_size` (single segment, 8-byte content size field) or none, then
// raw or RLE blocks.
class ZstdFrame {
 public:
  static ZstdFrame WithContentSize(uint64_t content_size) {
    ZstdFrame frame;
    frame.bytes_.push_back(static_cast<char>(0xE0));  // 8-byte content size, single segment
    PutLittleEndian(&frame.bytes_, content_size, 8);
    return frame;
  }
  static ZstdFrame WithoutContentSize() {
    ZstdFrame frame;
    frame.bytes_.push_back(0);                          // no content size, windowed
    frame.bytes_.push_back(static_cast<char>(7 << 3));  // window 2^17
    return frame;
  }
  ZstdFrame& Raw(std::string_view data, bool last) {
    Block(0, data.size(), last);
    bytes_.append(data);
    return *this;
  }
  ZstdFrame& Rle(char byte, size_t count, bool last) {
    Block(1, count, last);
    bytes_.push_back(byte);
    return *this;
  }
  std::string bytes() const { return std::string("\x28\xB5\x2F\xFD", 4) + bytes_; }

 private:
  void Block(uint32_t type, size_t size, bool last) {
    PutLittleEndian(&bytes_, (static_cast<uint32_t>(size) << 3) | (type << 1) | (last ? 1 : 0), 3);
  }
  std::string bytes_;
};

// A zstd frame holding `data` in raw blocks.
inline std::string RawZstdFrame(std::string_view data) {
  ZstdFrame frame = ZstdFrame::WithContentSize(data.size());
  constexpr size_t kMaxBlock = 128 * 1024;
  size_t position = 0;
  do {
    const size_t size = std::min(kMaxBlock, data.size() - position);
    frame.Raw(data.substr(position, size), position + size == data.size());
    position += size;
  } while (position < data.size());
  return frame.bytes();
}

// Flips every bit of `payload` in turn; each flipped copy must fail to decode.
template <typename Decode>
void ExpectEveryBitFlipRejected(const std::string& payload, Decode decode) {
  for (size_t bit = 0; bit < payload.size() * 8; ++bit) {
    std::string flipped = payload;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    Status status = decode(flipped);
    ASSERT_FALSE(status.ok()) << "bit " << bit << " of " << payload.size() * 8;
    ASSERT_TRUE(status.Is(StatusCode::kPermissionDenied) || status.Is(StatusCode::kCorruption) ||
                status.Is(StatusCode::kInvalidArgument))
        << "bit " << bit << ": " << status.ToString();
  }
}

template <typename Decode>
void ExpectEveryTruncationRejected(const std::string& payload, Decode decode) {
  for (size_t size = 0; size < payload.size(); ++size) {
    Status status = decode(payload.substr(0, size));
    ASSERT_FALSE(status.ok()) << "size " << size;
    ASSERT_TRUE(status.Is(StatusCode::kPermissionDenied) || status.Is(StatusCode::kCorruption))
        << "size " << size << ": " << status.ToString();
  }
  EXPECT_FALSE(decode(payload + " ").ok());
  EXPECT_FALSE(decode(payload + std::string(1, '\0')).ok());
}

}  // namespace cairn::envelope_testing
