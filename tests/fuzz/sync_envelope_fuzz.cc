// Fuzzes the sync envelope and receipt decoders (verification included) and
// the record block decoder behind them. Properties, for any input:
// - DecodeEnvelope, DecodeReceipt and DecodeRecordBlock never crash and fail
//   only with the documented status codes;
// - what decodes is valid: a header that re-encodes, records that pass
//   ValidateRecordBlock, as many records as the header says;
// - a decoded envelope re-encodes in both encodings and decodes to the same
//   content; so do receipts and record blocks.
// Each input is tried as given and re-signed with the fuzz key (as a binary
// and as a JSON message), so that mutations reach the parsers behind the MAC.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "cairn/core/record_codec.h"
#include "cairn/sync/sync_envelope.h"

#include "sync_envelope_fuzz_support.h"

namespace cairn::fuzz {
namespace {

// Round trips are checked on batches small enough to keep the fuzzer fast
// (a few bytes of runs can stand for megabytes of strings); larger ones are
// still decoded and checked for validity.
constexpr size_t kMaxRoundTripRecords = 2000;
constexpr size_t kMaxRoundTripStringBytes = size_t{1} << 20;

bool SmallEnoughToRoundTrip(const std::vector<RecordRow>& rows) {
  if (rows.size() > kMaxRoundTripRecords) return false;
  size_t string_bytes = 0;
  for (const RecordRow& row : rows) {
    for (const Field& field : row.fields) {
      if (const auto* text = std::get_if<std::string>(&field.value)) string_bytes += text->size();
    }
  }
  return string_bytes <= kMaxRoundTripStringBytes;
}

// Decoders check each chunk against the limits; the encoder checks a series'
// fields united over its chunks, which can exceed a limit each chunk met.
bool ValidOrOverLimit(const Status& status) {
  return status.ok() || status.Is(StatusCode::kResourceExhausted);
}

bool SameValue(const Value& a, const Value& b) {
  if (a.index() != b.index()) return false;
  if (const double* x = std::get_if<double>(&a)) {
    return std::bit_cast<uint64_t>(*x) == std::bit_cast<uint64_t>(std::get<double>(b));
  }
  return a == b;
}

bool SameRows(const std::vector<RecordRow>& a, const std::vector<RecordRow>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const RecordRow& x = a[i];
    const RecordRow& y = b[i];
    if (x.device_id != y.device_id || x.measure_name != y.measure_name || x.shard != y.shard ||
        x.dimensions != y.dimensions || x.attributes != y.attributes || x.timestamp != y.timestamp ||
        x.version != y.version || x.ttl != y.ttl || x.fields.size() != y.fields.size()) {
      return false;
    }
    for (size_t f = 0; f < x.fields.size(); ++f) {
      if (x.fields[f].name != y.fields[f].name || !SameValue(x.fields[f].value, y.fields[f].value))
        return false;
    }
  }
  return true;
}

// The order of a record block (record_codec.h): series (device, measure,
// shard, dimensions) by first appearance, records by timestamp; every record
// with its series' last attributes.
std::vector<RecordRow> InBlockOrder(std::vector<RecordRow> rows) {
  using SeriesKey = std::tuple<std::string, std::string, int, TagMap>;
  const auto series_of = [](const RecordRow& row) {
    return SeriesKey(row.device_id, row.measure_name, row.shard, row.dimensions);
  };
  std::map<SeriesKey, size_t> first_seen;
  std::map<SeriesKey, TagMap> attributes;
  for (const RecordRow& row : rows) {
    first_seen.emplace(series_of(row), first_seen.size());
    attributes[series_of(row)] = row.attributes;
  }
  for (RecordRow& row : rows) row.attributes = attributes.at(series_of(row));
  std::stable_sort(rows.begin(), rows.end(), [&](const RecordRow& a, const RecordRow& b) {
    const size_t series_a = first_seen.at(series_of(a));
    const size_t series_b = first_seen.at(series_of(b));
    if (series_a != series_b) return series_a < series_b;
    return a.timestamp < b.timestamp;
  });
  return rows;
}

bool IsDocumentedFailure(const Status& status) {
  return status.Is(StatusCode::kCorruption) || status.Is(StatusCode::kPermissionDenied) ||
         status.Is(StatusCode::kInvalidArgument) || status.Is(StatusCode::kResourceExhausted);
}

void CheckEnvelope(std::string_view payload) {
  Result<DecodedEnvelope> decoded = DecodeEnvelope(payload, kSyncFuzzKey);
  if (!decoded.ok()) {
    RequireSync(IsDocumentedFailure(decoded.status()), "envelope failures have documented codes");
    return;
  }
  const DecodedEnvelope& envelope = *decoded;
  RequireSync(!envelope.records.empty(), "an envelope holds records");
  RequireSync(envelope.records.size() - 1 <= envelope.header.last_lsn - envelope.header.first_lsn,
              "records fit the LSN range");
  RequireSync(ValidOrOverLimit(ValidateRecordBlock(envelope.records)), "decoded records are valid");
  RequireSync(ValidateGatewayId(envelope.header.gateway_id).ok(), "decoded gateway id is valid");
  if (!SmallEnoughToRoundTrip(envelope.records)) return;

  const std::vector<RecordRow> block_order = InBlockOrder(envelope.records);
  for (EnvelopeEncoding encoding : {EnvelopeEncoding::kBinary, EnvelopeEncoding::kJson}) {
    Result<std::string> again = EncodeEnvelope(envelope.header, envelope.records, kSyncFuzzKey, encoding);
    if (!again.ok()) {
      RequireSync(again.status().Is(StatusCode::kResourceExhausted), "a decoded envelope re-encodes");
      continue;
    }
    Result<DecodedEnvelope> redecoded = DecodeEnvelope(*again, kSyncFuzzKey);
    RequireSync(redecoded.ok(), "a re-encoded envelope decodes");
    RequireSync(redecoded->header == envelope.header, "headers survive a round trip");
    RequireSync(redecoded->encoding == encoding, "the encoding is recognised");
    if (encoding == EnvelopeEncoding::kJson) {
      RequireSync(SameRows(redecoded->records, envelope.records), "JSON keeps records in order");
    } else {
      RequireSync(SameRows(redecoded->records, block_order), "binary keeps records in block order");
    }
  }
}

void CheckReceipt(std::string_view payload) {
  Result<SyncReceipt> decoded = DecodeReceipt(payload, kSyncFuzzKey);
  if (!decoded.ok()) {
    RequireSync(IsDocumentedFailure(decoded.status()), "receipt failures have documented codes");
    return;
  }
  for (EnvelopeEncoding encoding : {EnvelopeEncoding::kBinary, EnvelopeEncoding::kJson}) {
    Result<std::string> again = EncodeReceipt(*decoded, kSyncFuzzKey, encoding);
    RequireSync(again.ok(), "a decoded receipt re-encodes");
    Result<SyncReceipt> redecoded = DecodeReceipt(*again, kSyncFuzzKey);
    RequireSync(redecoded.ok() && *redecoded == *decoded, "receipts survive a round trip");
  }
}

void CheckRecordBlock(std::string_view bytes) {
  Result<RecordBlock> decoded = DecodeRecordBlock(bytes);
  if (!decoded.ok()) {
    RequireSync(decoded.status().Is(StatusCode::kCorruption) ||
                    decoded.status().Is(StatusCode::kInvalidArgument) ||
                    decoded.status().Is(StatusCode::kResourceExhausted),
                "record block failures have documented codes");
    return;
  }
  RequireSync(ValidOrOverLimit(ValidateRecordBlock(decoded->records)), "decoded records are valid");
  if (!SmallEnoughToRoundTrip(decoded->records)) return;
  Result<std::string> again = EncodeRecordBlock(decoded->records);
  if (!again.ok()) {
    RequireSync(again.status().Is(StatusCode::kResourceExhausted), "a decoded block re-encodes");
    return;
  }
  Result<RecordBlock> redecoded = DecodeRecordBlock(*again);
  RequireSync(redecoded.ok(), "a re-encoded block decodes");
  RequireSync(SameRows(redecoded->records, decoded->records), "a block's order is stable");
}

}  // namespace
}  // namespace cairn::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn::fuzz;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  CheckEnvelope(input);
  CheckReceipt(input);
  CheckRecordBlock(input);
  for (const std::string& resigned : {WithValidBinaryMac(input), WithValidJsonMac(input)}) {
    if (resigned.empty() || resigned == input) continue;
    CheckEnvelope(resigned);
    CheckReceipt(resigned);
  }
  return 0;
}
