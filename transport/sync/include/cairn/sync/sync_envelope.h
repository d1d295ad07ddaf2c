// The sync envelope: one signed batch of records on its way from a gateway to
// the cloud ingest service, and the signed receipt that confirms it
// (DESIGN §6). The bytes are specified in transport/sync/src/envelope_format.md.
//
// An envelope names its gateway, table, lane, batch sequence and LSN range and
// carries the records. Two encodings, told apart by their first byte:
//   binary  the records as a record block (cairn/core/record_codec.h),
//           zstd-compressed, behind a fixed little-endian header;
//   JSON    the same content as one JSON object, records as objects, for
//           consumers that do not link cairn.
// Both end in an HMAC-SHA256 under the gateway's key, which the decoder
// checks before it decompresses or parses anything, so a forged or damaged
// payload costs one hash to reject. A receipt is signed the same way with the
// same key and carries a different type mark, so neither can pass for the
// other.
//
// MQTT topic names cannot hold '#' or '+', and the cloud partition key of a
// sharded series is `device#NN`; that key therefore travels in the payload
// (each record's device_id and shard), never in the topic.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/core/engine.h"
#include "cairn/core/record_codec.h"
#include "cairn/core/sync_ledger.h"
#include "cairn/platform/status.h"

namespace cairn {

enum class EnvelopeEncoding : uint8_t { kBinary, kJson };

// What identifies a batch. A receipt repeats it to say which batch it
// confirms.
struct EnvelopeHeader {
  std::string gateway_id;  // ValidateGatewayId
  std::string table;       // ValidateTableName
  SyncLane lane = SyncLane::kLive;
  // Increases by one per batch of this gateway, table and lane.
  uint64_t batch_sequence = 0;
  // The LSNs of the batch's records lie in [first_lsn, last_lsn].
  uint64_t first_lsn = 0;
  uint64_t last_lsn = 0;
  friend bool operator==(const EnvelopeHeader&, const EnvelopeHeader&) = default;
};

// Keys shorter than this are refused: an HMAC is only as strong as its key.
inline constexpr size_t kMinSyncKeyBytes = 16;
inline constexpr size_t kMaxGatewayIdBytes = 128;
inline constexpr size_t kMaxReceiptReasonBytes = 1024;

// A key as operators write it: hexadecimal digits (either case), surrounding
// whitespace ignored, at least 2 * kMinSyncKeyBytes digits. Returns the key
// bytes; InvalidArgument naming the problem (odd length, a non-hex
// character and its position, too short) otherwise.
Result<std::string> ParseSyncKeyHex(std::string_view text);

// Gateway ids appear in topic names: 1..128 bytes of UTF-8 without control
// characters, '/', '#' or '+'. InvalidArgument naming the problem otherwise.
Status ValidateGatewayId(std::string_view gateway_id);

// Bounds on an envelope, for the encoder (ResourceExhausted beyond them) and
// the decoder (ResourceExhausted before it allocates past them).
struct EnvelopeLimits {
  size_t max_payload_bytes = size_t{16} << 20;  // the whole envelope as sent
  size_t max_decoded_bytes = size_t{32} << 20;  // the record block after decompression
  RecordBlockLimits records;                    // what the record block may hold
};

// Encodes and signs a batch. Each record carries its series' dimensions
// (identity) and attributes (metadata); the binary encoding sends a series'
// attributes once, as its last record in `records` has them. `records` must
// be non-empty (an empty batch has nothing to confirm: the sender advances
// its watermark itself), hold at most last_lsn - first_lsn + 1 records (one
// LSN each), and pass ValidateRecordBlock; the header's identifiers must be
// valid and first_lsn <= last_lsn; `key` must hold at least kMinSyncKeyBytes
// bytes. InvalidArgument naming the problem otherwise; ResourceExhausted past
// `limits`.
Result<std::string> EncodeEnvelope(const EnvelopeHeader& header, std::span<const RecordRow> records,
                                   std::string_view key, EnvelopeEncoding encoding,
                                   const EnvelopeLimits& limits = {});

struct DecodedEnvelope {
  EnvelopeHeader header;
  EnvelopeEncoding encoding = EnvelopeEncoding::kBinary;
  // Binary: in record block order (record_codec.h), every record of a series
  // with the series' attributes; JSON: in payload order, each record with
  // the attributes it was sent with. An envelope of an older gateway (a
  // version 1 record block, or JSON with a top-level "dimensions" list) has
  // its series' dimensions in each record's `dimensions` and no attributes.
  std::vector<RecordRow> records;
};

// Verifies and decodes an envelope in either encoding (told apart by the
// first byte). Nothing behind the MAC is parsed, decompressed or allocated
// for until the MAC matches. Errors:
//   ResourceExhausted  the payload exceeds limits.max_payload_bytes, or an
//                      authentic envelope exceeds `limits` (its declared
//                      decompressed size is checked before allocating);
//   InvalidArgument    `key` is shorter than kMinSyncKeyBytes, or the
//                      envelope's format version or codec is unsupported;
//   PermissionDenied   the MAC does not match: forged, altered, or signed
//                      with another key;
//   Corruption         anything else: not an envelope (a receipt, noise),
//                      truncated, or authentic but malformed.
// The caller chooses `key` by the gateway id in the topic and must check
// that header.gateway_id names the same gateway.
Result<DecodedEnvelope> DecodeEnvelope(std::string_view payload, std::string_view key,
                                       const EnvelopeLimits& limits = {});

enum class ReceiptStatus : uint8_t {
  kOk = 0,        // the batch is committed on the ingest side
  kRejected = 1,  // the ingest side refused the batch; `reason` says why
};

std::string_view ReceiptStatusName(ReceiptStatus status);  // "ok", "rejected"

// The ingest service's answer to one envelope, published after its commit.
struct SyncReceipt {
  EnvelopeHeader batch;  // the header of the envelope it answers
  ReceiptStatus status = ReceiptStatus::kOk;
  // UTF-8 without control characters, at most kMaxReceiptReasonBytes;
  // non-empty when rejected.
  std::string reason;
  friend bool operator==(const SyncReceipt&, const SyncReceipt&) = default;
};

// Encodes and signs a receipt. InvalidArgument for an invalid header,
// reason or key (as for EncodeEnvelope).
Result<std::string> EncodeReceipt(const SyncReceipt& receipt, std::string_view key,
                                  EnvelopeEncoding encoding);

// Longer payloads are refused before they are verified.
inline constexpr size_t kMaxReceiptPayloadBytes = 8192;

// Verifies and decodes a receipt in either encoding. Errors as for
// DecodeEnvelope (ResourceExhausted above kMaxReceiptPayloadBytes).
Result<SyncReceipt> DecodeReceipt(std::string_view payload, std::string_view key);

// ---- topics -----------------------------------------------------------------

// Envelopes go to "<prefix>/<gateway_id>/<table>/<lane>", receipts come back
// on "<prefix>/<gateway_id>/receipts" (four levels after the prefix against
// three: the two never match the same filter by accident, and a broker ACL
// "<prefix>/<gateway_id>/#" covers all of one gateway's traffic).
// The prefix is one or more non-empty levels separated by '/', valid UTF-8
// without NUL, '#' or '+'. InvalidArgument naming the bad part otherwise.
Result<std::string> SyncTopic(std::string_view prefix, std::string_view gateway_id, std::string_view table,
                              SyncLane lane);
Result<std::string> ReceiptTopic(std::string_view prefix, std::string_view gateway_id);

struct SyncTopicParts {
  std::string gateway_id;
  std::string table;
  SyncLane lane = SyncLane::kLive;
  friend bool operator==(const SyncTopicParts&, const SyncTopicParts&) = default;
};

// The inverse of SyncTopic for a topic under `prefix`; InvalidArgument when
// `topic` is not such a topic.
Result<SyncTopicParts> ParseSyncTopic(std::string_view prefix, std::string_view topic);

// The cloud partition key of a series: "<device_id>#<shard>", the shard in
// at least two decimal digits ("pump-7#00", "pump-7#13", "pump-7#128").
// Precondition: shard >= 0.
std::string PartitionKey(std::string_view device_id, int shard);

}  // namespace cairn
