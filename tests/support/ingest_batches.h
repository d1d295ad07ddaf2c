// Test batches for the ingest service (cloud/ingest): records covering
// every field type and its extremes, bit-exact comparison of what a sink
// read back, and a sink wrapper that fails on demand.
//
// Header-only, for gtest tests: the unit tests link it with cairn_ingest,
// the integration tests with cairn_ingest and a real PostgreSQL.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/engine.h"
#include "cairn/ingest/ingest_sink.h"
#include "cairn/sync/sync_envelope.h"

#include "record_rows.h"

namespace cairn::ingest_test {

using test_rows::DescribeRow;
using test_rows::DescribeValue;
using test_rows::SameRow;
using test_rows::SameValue;

inline constexpr int64_t kSecond = 1'000'000'000;
inline constexpr int64_t kStart = 1'700'000'000 * kSecond;

// A row with its fields sorted by name, as sinks return them.
inline RecordRow Row(std::string device_id, std::string measure_name, int64_t timestamp,
                     std::vector<Field> fields, uint64_t version = 0, int64_t ttl = 0, int shard = 0) {
  RecordRow row = test_rows::Row(std::move(device_id), std::move(measure_name), timestamp, std::move(fields),
                                 version, ttl, shard);
  std::sort(row.fields.begin(), row.fields.end(),
            [](const Field& a, const Field& b) { return a.name < b.name; });
  return row;
}

// `row` with these dimensions and attributes.
inline RecordRow Tagged(RecordRow row, TagMap dimensions, TagMap attributes = {}) {
  row.dimensions = std::move(dimensions);
  row.attributes = std::move(attributes);
  return row;
}

// The sinks' dimensions text (ingest_schema.md §1) for tags without the
// characters JSON escapes, which is all these tests use: the order sinks
// list readings of one device and measure in.
inline std::string TagsText(const TagMap& tags) {
  std::string text = "{";
  for (const auto& [name, value] : tags) {
    if (text.size() > 1) text += ",";
    text += "\"" + name + "\":\"" + value + "\"";
  }
  return text + "}";
}

inline std::string DescribeTags(const TagMap& tags) { return TagsText(tags); }

// Every field type with its extremes: -0.0, the smallest subnormal, the
// largest double, values that need 17 digits, int64 min and max, both
// bools, strings with escapes, control characters and multi-byte UTF-8,
// timestamps at both ends of int64, uint64 versions up to the maximum, a
// sharded series and a hierarchical measure name.
inline std::vector<RecordRow> AllTypesRows() {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return {
      Row("pump-7", "env#temperature", kStart,
          {{"celsius", 21.5}, {"negative_zero", -0.0}, {"ok", true}, {"count", int64_t{-3}}}),
      Row("pump-7", "env#temperature", kStart + kSecond,
          {{"celsius", 0.1}, {"negative_zero", 0.30000000000000004}, {"ok", false}, {"count", kMin}}, 7,
          1'900'000'000),
      Row("pump-7", "env#temperature", kStart + 2 * kSecond,
          {{"celsius", std::numeric_limits<double>::denorm_min()},
           {"negative_zero", std::numeric_limits<double>::max()},
           {"ok", true},
           {"count", kMax}},
          std::numeric_limits<uint64_t>::max()),
      Row("pump-7", "env#temperature", kStart + 3 * kSecond,
          {{"celsius", -std::numeric_limits<double>::max()},
           {"negative_zero", -std::numeric_limits<double>::min()},
           {"ok", false},
           {"count", int64_t{0}}}),
      Row("valve-3", "state", kStart,
          {{"label", std::string("Grüße, 温度 🌡 \"quoted\" back\\slash\ttab\nnewline \x01\x1f\x7f")},
           {"at", Timestamp{kMin}}},
          0, 0, 13),
      Row("valve-3", "state", kStart + kSecond, {{"label", std::string("")}, {"at", Timestamp{kMax}}}, 1, 0,
          13),
      Row("valve-3", "state", kStart + 2 * kSecond, {{"label", std::string(4096, 'x')}, {"at", Timestamp{0}}},
          2, 0, 13),
      Row("\xe8\xa8\xad\xe5\x82\x99-1", "m\xc3\xa9sure", kMin, {{"v", 1e300}}),
      Row("\xe8\xa8\xad\xe5\x82\x99-1", "m\xc3\xa9sure", kMax, {{"v", -1e-300}}),
  };
}

// The rows a sink should hold after storing `rows`, in this order, into
// `table` (winners of the version rule: the greatest (version, LSN); each
// with the attributes its series was last sent with), in ReadReadings order.
inline std::vector<StoredReading> Expected(const std::string& table, std::vector<RecordRow> rows) {
  std::map<std::tuple<std::string, std::string, TagMap, int>, TagMap> attributes;
  for (const RecordRow& row : rows) {
    TagMap& stored = attributes[{row.device_id, row.measure_name, row.dimensions, row.shard}];
    if (!row.attributes.empty()) stored = row.attributes;
  }
  std::vector<StoredReading> expected;
  std::stable_sort(rows.begin(), rows.end(), [](const RecordRow& a, const RecordRow& b) {
    return std::tuple(a.device_id, a.measure_name, TagsText(a.dimensions), a.timestamp) <
           std::tuple(b.device_id, b.measure_name, TagsText(b.dimensions), b.timestamp);
  });
  for (RecordRow& row : rows) {
    row.attributes = attributes[{row.device_id, row.measure_name, row.dimensions, row.shard}];
    if (!expected.empty() && expected.back().row.device_id == row.device_id &&
        expected.back().row.measure_name == row.measure_name &&
        expected.back().row.dimensions == row.dimensions && expected.back().row.timestamp == row.timestamp) {
      const RecordRow& kept = expected.back().row;
      if (std::pair(row.version, row.lsn) > std::pair(kept.version, kept.lsn)) expected.back().row = std::move(row);
      continue;
    }
    expected.push_back(StoredReading{table, std::move(row)});
  }
  return expected;
}

// "" when `actual` equals `expected` bit for bit; otherwise what differs.
inline std::string CompareReadings(const std::vector<StoredReading>& expected,
                                   const std::vector<StoredReading>& actual) {
  std::ostringstream out;
  if (expected.size() != actual.size()) {
    out << "expected " << expected.size() << " readings, found " << actual.size() << "\n";
  }
  for (size_t i = 0; i < std::min(expected.size(), actual.size()); ++i) {
    const RecordRow& want = expected[i].row;
    const RecordRow& got = actual[i].row;
    if (expected[i].table != actual[i].table || !SameRow(want, got) || want.dimensions != got.dimensions ||
        want.attributes != got.attributes) {
      out << "reading " << i << ":\n  expected " << expected[i].table << " " << DescribeRow(want) << " "
          << DescribeTags(want.dimensions) << " " << DescribeTags(want.attributes) << "\n  found    "
          << actual[i].table << " " << DescribeRow(got) << " " << DescribeTags(got.dimensions) << " "
          << DescribeTags(got.attributes) << "\n";
    }
  }
  return out.str();
}

inline constexpr std::string_view kGatewayKey = "gateway key of gw-7, 32 bytes!!!";

// The envelope a gateway would send, as the ingest side decodes it: encoded
// and decoded for real, so the rows also pass the envelope's validation.
inline Result<DecodedEnvelope> MakeBatch(const EnvelopeHeader& header, const std::vector<RecordRow>& rows,
                                         EnvelopeEncoding encoding = EnvelopeEncoding::kBinary) {
  CAIRN_ASSIGN_OR_RETURN(std::string payload, EncodeEnvelope(header, rows, kGatewayKey, encoding));
  return DecodeEnvelope(payload, kGatewayKey);
}

// A header for `rows.size()` records of gw-7's table "sensors".
inline EnvelopeHeader HeaderFor(uint64_t sequence, size_t records, SyncLane lane = SyncLane::kLive) {
  return EnvelopeHeader{"gw-7", "sensors", lane, sequence, sequence * 1000, sequence * 1000 + records - 1};
}

// Everything `sink` stored, in ReadReadings' order; a test failure and no
// readings when it cannot be read.
inline std::vector<StoredReading> StoredReadings(IngestSink* sink) {
  Result<std::vector<StoredReading>> readings = sink->ReadReadings();
  EXPECT_TRUE(readings.ok()) << readings.status().ToString();
  return readings.ok() ? *readings : std::vector<StoredReading>{};
}

// Two batches of one series for the version rule (DESIGN §3). `first`
// stores two readings at version 5. `second` rewrites one of them with a
// higher version, the other with a lower one, and writes a new identity
// three times: versions 1, 3 and 3 (the first of the two 3s wins).
struct VersionRuleBatches {
  std::vector<RecordRow> first;
  std::vector<RecordRow> second;
};

inline VersionRuleBatches VersionRuleRows() {
  return {{Row("pump-7", "env", kStart, {{"t", 1.0}}, 5),
           Row("pump-7", "env", kStart + kSecond, {{"t", 2.0}}, 5)},
          {
              Row("pump-7", "env", kStart, {{"t", 10.0}}, 6),
              Row("pump-7", "env", kStart + kSecond, {{"t", 20.0}}, 4),
              Row("pump-7", "env", kStart + 2 * kSecond, {{"t", 30.0}}, 1),
              Row("pump-7", "env", kStart + 2 * kSecond, {{"t", 31.0}}, 3),
              Row("pump-7", "env", kStart + 2 * kSecond, {{"t", 32.0}}, 3),
          }};
}

// Forwards to another sink, but first answers ApplyBatch with the queued
// errors, one per call, as a database that fails would.
class FailingSink : public IngestSink {
 public:
  explicit FailingSink(IngestSink* target) : target_(target) {}

  void FailNext(Status error) {
    std::lock_guard<std::mutex> lock(mutex_);
    failures_.push_back(std::move(error));
  }
  // Fails every call with `error` once the queued errors are used up; OK
  // ends that.
  void FailAlways(Status error) {
    std::lock_guard<std::mutex> lock(mutex_);
    always_ = std::move(error);
  }
  int apply_calls() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return apply_calls_;
  }
  int reconnects() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return reconnects_;
  }

  Result<SinkCounts> ApplyBatch(const DecodedEnvelope& batch, int64_t received_at) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++apply_calls_;
      if (!failures_.empty()) {
        Status error = failures_.front();
        failures_.pop_front();
        return error;
      }
      if (!always_.ok()) return always_;
    }
    return target_->ApplyBatch(batch, received_at);
  }
  Status Reconnect() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++reconnects_;
    }
    return target_->Reconnect();
  }
  Result<std::vector<StoredReading>> ReadReadings() override { return target_->ReadReadings(); }
  Result<std::vector<StoredSeries>> ReadSeries() override { return target_->ReadSeries(); }
  Result<std::vector<StoredBatch>> ReadBatches() override { return target_->ReadBatches(); }
  std::string_view kind() const override { return target_->kind(); }

 private:
  IngestSink* target_;
  mutable std::mutex mutex_;
  std::deque<Status> failures_;
  Status always_;
  int apply_calls_ = 0;
  int reconnects_ = 0;
};

}  // namespace cairn::ingest_test
