// Sync envelopes and receipts (sync_envelope.h): the binary encoding, the
// checks both encodings share, and topics. The JSON encoding is in
// envelope_json.cc; the bytes are specified in envelope_format.md beside
// this file.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <utility>

#include <zstd.h>

#include "cairn/core/table.h"
#include "cairn/platform/crypto.h"
#include "cairn/sync/sync_envelope.h"
#include "cairn/util/endian.h"
#include "cairn/util/hex.h"
#include "envelope_codec.h"

namespace cairn {

using namespace envelope_detail;

// ---------------------------------------------------------------------------
// Validation shared by both encodings

namespace envelope_detail {

Status ValidateHeader(const EnvelopeHeader& header) {
  CAIRN_RETURN_IF_ERROR(ValidateGatewayId(header.gateway_id));
  CAIRN_RETURN_IF_ERROR(ValidateTableName(header.table));
  if (!IsKnownLane(static_cast<uint8_t>(header.lane))) {
    return Status::InvalidArgument("unknown sync lane " + std::to_string(static_cast<int>(header.lane)));
  }
  if (header.first_lsn > header.last_lsn) {
    return Status::InvalidArgument("LSN range " + std::to_string(header.first_lsn) + ".." +
                                   std::to_string(header.last_lsn) + " is reversed");
  }
  return Status::Ok();
}

Status ValidateRecordCount(const EnvelopeHeader& header, uint64_t record_count) {
  if (record_count == 0) return Status::InvalidArgument("a sync batch needs at least one record");
  if (record_count - 1 > header.last_lsn - header.first_lsn) {
    return Status::InvalidArgument(std::to_string(record_count) + " records do not fit LSN range " +
                                   std::to_string(header.first_lsn) + ".." + std::to_string(header.last_lsn));
  }
  return Status::Ok();
}

Status ValidateReason(const SyncReceipt& receipt) {
  if (receipt.status != ReceiptStatus::kOk && receipt.status != ReceiptStatus::kRejected) {
    return Status::InvalidArgument("unknown receipt status " +
                                   std::to_string(static_cast<int>(receipt.status)));
  }
  if (receipt.reason.empty()) {
    if (receipt.status == ReceiptStatus::kRejected) {
      return Status::InvalidArgument("a rejected receipt needs a reason");
    }
    return Status::Ok();
  }
  return ValidateIdentifier("receipt reason", receipt.reason, kMaxReceiptReasonBytes);
}

Status AsCorruption(const Status& status, std::string_view what) {
  if (status.ok()) return status;
  if (status.Is(StatusCode::kInvalidArgument)) {
    return Status::Corruption(std::string(what) + ": " + status.message());
  }
  return status.WithContext(what);
}
}  // namespace envelope_detail

namespace {

constexpr std::string_view kEnvelopeMagic = "CSYN";
constexpr std::string_view kReceiptMagic = "CRCP";

// magic, version, codec, lane, flags, batch_sequence, first_lsn, last_lsn,
// record_count, stored_size, block_size, gateway_size.
constexpr size_t kEnvelopeFixedBytes = 45;
// magic, version, lane, status, flags, batch_sequence, first_lsn, last_lsn,
// gateway_size.
constexpr size_t kReceiptFixedBytes = 33;

enum class Codec : uint8_t { kStored = 0, kZstd = 1 };
constexpr int kZstdLevel = 3;
// Level 3 never uses a window above 2 MiB; readers allow up to 8 MiB.
constexpr int kZstdMaxWindowLog = 23;

// ---------------------------------------------------------------------------
// Bytes

void PutByte(std::string* out, uint8_t value) { out->push_back(static_cast<char>(value)); }

using util::PutLittleEndian;

// Precondition: offset + width <= bytes.size().
uint64_t LoadLittleEndian(std::string_view bytes, size_t offset, size_t width) {
  return util::LoadLittleEndian(bytes.data() + offset, width);
}

Status ValidateKey(std::string_view key) {
  if (key.size() < kMinSyncKeyBytes) {
    return Status::InvalidArgument("sync key of " + std::to_string(key.size()) + " bytes; at least " +
                                   std::to_string(kMinSyncKeyBytes) + " are needed");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// MACs

std::string BinaryMac(std::string_view key, std::string_view signed_bytes) {
  const Sha256Digest mac = HmacSha256(key, signed_bytes);
  return std::string(reinterpret_cast<const char*>(mac.data()), mac.size());
}

// Checks the MAC in the last 32 bytes of `payload`; returns the bytes before it.
Result<std::string_view> VerifyBinaryMac(std::string_view payload, std::string_view key,
                                         std::string_view what) {
  const std::string_view signed_bytes = payload.substr(0, payload.size() - kMacBytes);
  const Sha256Digest expected = HmacSha256(key, signed_bytes);
  if (!ConstantTimeEqual(expected, AsBytes(payload.substr(payload.size() - kMacBytes)))) {
    return Status::PermissionDenied(std::string(what) +
                                    ": MAC does not match (forged, altered, or another key)");
  }
  return signed_bytes;
}

// ---------------------------------------------------------------------------
// zstd

struct ZstdContextDeleter {
  void operator()(ZSTD_CCtx* context) const { ZSTD_freeCCtx(context); }
  void operator()(ZSTD_DCtx* context) const { ZSTD_freeDCtx(context); }
};

Result<std::string> Compress(std::string_view block) {
  std::unique_ptr<ZSTD_CCtx, ZstdContextDeleter> context(ZSTD_createCCtx());
  if (context == nullptr) return Status::ResourceExhausted("zstd: cannot allocate a compression context");
  std::string out(ZSTD_compressBound(block.size()), '\0');
  const size_t size =
      ZSTD_compressCCtx(context.get(), out.data(), out.size(), block.data(), block.size(), kZstdLevel);
  if (ZSTD_isError(size)) return Status::Internal(std::string("zstd: ") + ZSTD_getErrorName(size));
  out.resize(size);
  return out;
}

// Decompresses one zstd frame that must hold exactly `block_size` bytes. The
// caller has checked block_size against its limit; nothing larger is ever
// allocated, and output beyond it is an error, not a reallocation.
Result<std::string> Decompress(std::string_view frame, size_t block_size) {
  if (frame.size() < 4 || LoadLittleEndian(frame, 0, 4) != ZSTD_MAGICNUMBER) {
    return Status::Corruption("envelope: the stored record block is not a zstd frame");
  }
  const size_t frame_size = ZSTD_findFrameCompressedSize(frame.data(), frame.size());
  if (ZSTD_isError(frame_size) || frame_size != frame.size()) {
    return Status::Corruption("envelope: the stored record block is not exactly one zstd frame");
  }
  const unsigned long long content_size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (content_size == ZSTD_CONTENTSIZE_UNKNOWN || content_size == ZSTD_CONTENTSIZE_ERROR) {
    return Status::Corruption("envelope: the zstd frame does not declare its content size");
  }
  if (content_size != block_size) {
    return Status::Corruption("envelope: the zstd frame holds " + std::to_string(content_size) +
                              " bytes, the header says " + std::to_string(block_size));
  }
  std::unique_ptr<ZSTD_DCtx, ZstdContextDeleter> context(ZSTD_createDCtx());
  if (context == nullptr) return Status::ResourceExhausted("zstd: cannot allocate a decompression context");
  const size_t set = ZSTD_DCtx_setParameter(context.get(), ZSTD_d_windowLogMax, kZstdMaxWindowLog);
  if (ZSTD_isError(set)) return Status::Internal(std::string("zstd: ") + ZSTD_getErrorName(set));

  std::string block(block_size, '\0');
  ZSTD_inBuffer input{frame.data(), frame.size(), 0};
  ZSTD_outBuffer output{block.data(), block.size(), 0};
  while (true) {
    const size_t input_before = input.pos;
    const size_t output_before = output.pos;
    const size_t result = ZSTD_decompressStream(context.get(), &output, &input);
    if (ZSTD_isError(result))
      return Status::Corruption(std::string("envelope: zstd: ") + ZSTD_getErrorName(result));
    if (result == 0) break;  // the frame is complete
    if (input.pos == input_before && output.pos == output_before) {
      if (input.pos == input.size) return Status::Corruption("envelope: the zstd frame is truncated");
      return Status::Corruption("envelope: the zstd frame holds more than " + std::to_string(block_size) +
                                " bytes");
    }
  }
  if (input.pos != input.size || output.pos != block.size()) {
    return Status::Corruption("envelope: the zstd frame does not match its declared size");
  }
  return block;
}

// ---------------------------------------------------------------------------
// Binary envelope

Result<std::string> EncodeBinaryEnvelope(const EnvelopeHeader& header, std::span<const RecordRow> records,
                                         std::string_view key, const EnvelopeLimits& limits) {
  CAIRN_ASSIGN_OR_RETURN(std::string block, EncodeRecordBlock(records, limits.records));
  if (block.size() > limits.max_decoded_bytes || block.size() > UINT32_MAX) {
    return Status::ResourceExhausted("record block of " + std::to_string(block.size()) +
                                     " bytes exceeds the limit of " +
                                     std::to_string(limits.max_decoded_bytes));
  }
  CAIRN_ASSIGN_OR_RETURN(std::string compressed, Compress(block));
  const bool use_zstd = compressed.size() < block.size();
  const std::string& stored = use_zstd ? compressed : block;

  std::string out;
  out.reserve(kEnvelopeFixedBytes + 1 + header.gateway_id.size() + header.table.size() + stored.size() +
              kMacBytes);
  out.append(kEnvelopeMagic);
  PutByte(&out, kFormatVersion);
  PutByte(&out, static_cast<uint8_t>(use_zstd ? Codec::kZstd : Codec::kStored));
  PutByte(&out, static_cast<uint8_t>(header.lane));
  PutByte(&out, 0);  // flags
  PutLittleEndian(&out, header.batch_sequence, 8);
  PutLittleEndian(&out, header.first_lsn, 8);
  PutLittleEndian(&out, header.last_lsn, 8);
  PutLittleEndian(&out, records.size(), 4);
  PutLittleEndian(&out, stored.size(), 4);
  PutLittleEndian(&out, block.size(), 4);
  PutByte(&out, static_cast<uint8_t>(header.gateway_id.size()));
  out.append(header.gateway_id);
  PutByte(&out, static_cast<uint8_t>(header.table.size()));
  out.append(header.table);
  out.append(stored);
  out.append(BinaryMac(key, out));
  return out;
}

Result<DecodedEnvelope> DecodeBinaryEnvelope(std::string_view payload, std::string_view key,
                                             const EnvelopeLimits& limits) {
  if (payload.size() < kEnvelopeMagic.size() + 1) return Status::Corruption("envelope: truncated header");
  const uint8_t version = static_cast<uint8_t>(payload[4]);
  if (version != kFormatVersion) {
    return Status::InvalidArgument("envelope: unsupported format version " + std::to_string(version));
  }
  // The smallest envelope: one-byte gateway id and table, nothing stored.
  if (payload.size() < kEnvelopeFixedBytes + 1 + 1 + 1 + kMacBytes) {
    return Status::Corruption("envelope: " + std::to_string(payload.size()) + " bytes is too short");
  }
  CAIRN_ASSIGN_OR_RETURN(std::string_view body, VerifyBinaryMac(payload, key, "envelope"));

  // Authentic from here on.
  const uint8_t codec = static_cast<uint8_t>(body[5]);
  const uint8_t lane = static_cast<uint8_t>(body[6]);
  const uint8_t flags = static_cast<uint8_t>(body[7]);
  if (codec != static_cast<uint8_t>(Codec::kStored) && codec != static_cast<uint8_t>(Codec::kZstd)) {
    return Status::InvalidArgument("envelope: unsupported codec " + std::to_string(codec));
  }
  if (!IsKnownLane(lane)) return Status::Corruption("envelope: unknown lane " + std::to_string(lane));
  if (flags != 0) return Status::Corruption("envelope: unknown flags " + std::to_string(flags));

  DecodedEnvelope envelope;
  envelope.encoding = EnvelopeEncoding::kBinary;
  EnvelopeHeader& header = envelope.header;
  header.lane = static_cast<SyncLane>(lane);
  header.batch_sequence = LoadLittleEndian(body, 8, 8);
  header.first_lsn = LoadLittleEndian(body, 16, 8);
  header.last_lsn = LoadLittleEndian(body, 24, 8);
  const uint64_t record_count = LoadLittleEndian(body, 32, 4);
  const uint64_t stored_size = LoadLittleEndian(body, 36, 4);
  const uint64_t block_size = LoadLittleEndian(body, 40, 4);

  size_t position = kEnvelopeFixedBytes - 1;
  const size_t gateway_size = static_cast<uint8_t>(body[position++]);
  if (body.size() - position < gateway_size + 1) return Status::Corruption("envelope: truncated gateway id");
  header.gateway_id = std::string(body.substr(position, gateway_size));
  position += gateway_size;
  const size_t table_size = static_cast<uint8_t>(body[position++]);
  if (body.size() - position < table_size) return Status::Corruption("envelope: truncated table name");
  header.table = std::string(body.substr(position, table_size));
  position += table_size;
  if (body.size() - position != stored_size) {
    return Status::Corruption("envelope: header declares " + std::to_string(stored_size) +
                              " stored bytes, the message holds " + std::to_string(body.size() - position));
  }
  CAIRN_RETURN_IF_ERROR(AsCorruption(ValidateHeader(header), "envelope"));
  CAIRN_RETURN_IF_ERROR(AsCorruption(ValidateRecordCount(header, record_count), "envelope"));
  if (record_count > limits.records.max_records) {
    return Status::ResourceExhausted("envelope of " + std::to_string(record_count) +
                                     " records exceeds the limit of " +
                                     std::to_string(limits.records.max_records));
  }
  if (block_size > limits.max_decoded_bytes) {
    return Status::ResourceExhausted("envelope: record block of " + std::to_string(block_size) +
                                     " bytes exceeds the limit of " +
                                     std::to_string(limits.max_decoded_bytes));
  }

  const std::string_view stored = body.substr(position);
  std::string decompressed;
  std::string_view block = stored;
  if (codec == static_cast<uint8_t>(Codec::kZstd)) {
    CAIRN_ASSIGN_OR_RETURN(decompressed, Decompress(stored, static_cast<size_t>(block_size)));
    block = decompressed;
  } else if (stored_size != block_size) {
    return Status::Corruption("envelope: stored block of " + std::to_string(stored_size) +
                              " bytes, header says " + std::to_string(block_size));
  }
  Result<RecordBlock> decoded = DecodeRecordBlock(block, limits.records);
  if (!decoded.ok()) return decoded.status().WithContext("envelope");
  if (decoded->records.size() != record_count) {
    return Status::Corruption("envelope: header declares " + std::to_string(record_count) +
                              " records, the block holds " + std::to_string(decoded->records.size()));
  }
  envelope.records = std::move(decoded->records);
  return envelope;
}


// ---------------------------------------------------------------------------
// Receipts

Result<SyncReceipt> DecodeBinaryReceipt(std::string_view payload, std::string_view key) {
  if (payload.size() < kReceiptMagic.size() + 1) return Status::Corruption("receipt: truncated header");
  const uint8_t version = static_cast<uint8_t>(payload[4]);
  if (version != kFormatVersion) {
    return Status::InvalidArgument("receipt: unsupported format version " + std::to_string(version));
  }
  // The smallest receipt: one-byte gateway id and table, no reason.
  if (payload.size() < kReceiptFixedBytes + 1 + 1 + 1 + 2 + kMacBytes) {
    return Status::Corruption("receipt: " + std::to_string(payload.size()) + " bytes is too short");
  }
  CAIRN_ASSIGN_OR_RETURN(std::string_view body, VerifyBinaryMac(payload, key, "receipt"));

  const uint8_t lane = static_cast<uint8_t>(body[5]);
  const uint8_t status = static_cast<uint8_t>(body[6]);
  const uint8_t flags = static_cast<uint8_t>(body[7]);
  if (!IsKnownLane(lane)) return Status::Corruption("receipt: unknown lane " + std::to_string(lane));
  if (status > static_cast<uint8_t>(ReceiptStatus::kRejected)) {
    return Status::Corruption("receipt: unknown status " + std::to_string(status));
  }
  if (flags != 0) return Status::Corruption("receipt: unknown flags " + std::to_string(flags));
  SyncReceipt receipt;
  receipt.batch.lane = static_cast<SyncLane>(lane);
  receipt.status = static_cast<ReceiptStatus>(status);
  receipt.batch.batch_sequence = LoadLittleEndian(body, 8, 8);
  receipt.batch.first_lsn = LoadLittleEndian(body, 16, 8);
  receipt.batch.last_lsn = LoadLittleEndian(body, 24, 8);

  size_t position = kReceiptFixedBytes - 1;
  const size_t gateway_size = static_cast<uint8_t>(body[position++]);
  if (body.size() - position < gateway_size + 1) return Status::Corruption("receipt: truncated gateway id");
  receipt.batch.gateway_id = std::string(body.substr(position, gateway_size));
  position += gateway_size;
  const size_t table_size = static_cast<uint8_t>(body[position++]);
  if (body.size() - position < table_size + 2) return Status::Corruption("receipt: truncated table name");
  receipt.batch.table = std::string(body.substr(position, table_size));
  position += table_size;
  const size_t reason_size = static_cast<size_t>(LoadLittleEndian(body, position, 2));
  position += 2;
  if (body.size() - position != reason_size) {
    return Status::Corruption("receipt: declares a reason of " + std::to_string(reason_size) +
                              " bytes, holds " + std::to_string(body.size() - position));
  }
  receipt.reason = std::string(body.substr(position));
  CAIRN_RETURN_IF_ERROR(AsCorruption(ValidateHeader(receipt.batch), "receipt"));
  CAIRN_RETURN_IF_ERROR(AsCorruption(ValidateReason(receipt), "receipt"));
  return receipt;
}


// ---------------------------------------------------------------------------
// Topics

Status ValidateTopicPrefix(std::string_view prefix) {
  constexpr size_t kMaxTopicPrefixBytes = 1024;
  CAIRN_RETURN_IF_ERROR(ValidateIdentifier("topic prefix", prefix, kMaxTopicPrefixBytes));
  if (prefix.find_first_of("#+") != std::string_view::npos) {
    return Status::InvalidArgument("topic prefix '" + std::string(prefix) +
                                   "' contains a wildcard ('#' or '+')");
  }
  if (prefix.front() == '/' || prefix.back() == '/' || prefix.find("//") != std::string_view::npos) {
    return Status::InvalidArgument("topic prefix '" + std::string(prefix) + "' has an empty level");
  }
  return Status::Ok();
}

}  // namespace


Result<std::string> ParseSyncKeyHex(std::string_view text) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  for (size_t i = 0; i < text.size(); ++i) {
    if (util::HexDigitValue(text[i]) < 0) {
      return Status::InvalidArgument("the key is not hexadecimal: character " + std::to_string(i + 1) +
                                     " is not 0-9, a-f or A-F");
    }
  }
  if (text.size() % 2 != 0) return Status::InvalidArgument("the key has an odd number of hex digits");
  if (text.size() < 2 * kMinSyncKeyBytes) {
    return Status::InvalidArgument("the key has " + std::to_string(text.size()) + " hex digits; at least " +
                                   std::to_string(2 * kMinSyncKeyBytes) + " are needed");
  }
  return *util::HexDecode(text);  // every digit was checked above
}

std::string_view ReceiptStatusName(ReceiptStatus status) {
  switch (status) {
    case ReceiptStatus::kOk:
      return "ok";
    case ReceiptStatus::kRejected:
      return "rejected";
  }
  return "unknown";
}

Status ValidateGatewayId(std::string_view gateway_id) {
  CAIRN_RETURN_IF_ERROR(ValidateIdentifier("gateway_id", gateway_id, kMaxGatewayIdBytes));
  if (gateway_id.find_first_of("/#+") != std::string_view::npos) {
    return Status::InvalidArgument("gateway_id '" + std::string(gateway_id) +
                                   "' contains '/', '#' or '+', which topic levels cannot hold");
  }
  return Status::Ok();
}

Result<std::string> EncodeEnvelope(const EnvelopeHeader& header, std::span<const RecordRow> records,
                                   std::string_view key, EnvelopeEncoding encoding,
                                   const EnvelopeLimits& limits) {
  CAIRN_RETURN_IF_ERROR(ValidateKey(key));
  CAIRN_RETURN_IF_ERROR(ValidateHeader(header));
  CAIRN_RETURN_IF_ERROR(ValidateRecordCount(header, records.size()));
  Result<std::string> payload = encoding == EnvelopeEncoding::kJson
                                    ? EncodeJsonEnvelope(header, records, key, limits)
                                    : EncodeBinaryEnvelope(header, records, key, limits);
  if (payload.ok() && payload->size() > limits.max_payload_bytes) {
    return Status::ResourceExhausted("envelope of " + std::to_string(payload->size()) +
                                     " bytes exceeds the limit of " +
                                     std::to_string(limits.max_payload_bytes));
  }
  return payload;
}

Result<DecodedEnvelope> DecodeEnvelope(std::string_view payload, std::string_view key,
                                       const EnvelopeLimits& limits) {
  if (payload.size() > limits.max_payload_bytes) {
    return Status::ResourceExhausted("envelope of " + std::to_string(payload.size()) +
                                     " bytes exceeds the limit of " +
                                     std::to_string(limits.max_payload_bytes));
  }
  CAIRN_RETURN_IF_ERROR(ValidateKey(key));
  if (!payload.empty() && payload.front() == '{') return DecodeJsonEnvelope(payload, key, limits);
  if (payload.starts_with(kEnvelopeMagic)) return DecodeBinaryEnvelope(payload, key, limits);
  if (payload.starts_with(kReceiptMagic)) return Status::Corruption("envelope: this is a receipt");
  return Status::Corruption("envelope: not a sync envelope (unknown first bytes)");
}

Result<std::string> EncodeReceipt(const SyncReceipt& receipt, std::string_view key,
                                  EnvelopeEncoding encoding) {
  CAIRN_RETURN_IF_ERROR(ValidateKey(key));
  CAIRN_RETURN_IF_ERROR(ValidateHeader(receipt.batch));
  CAIRN_RETURN_IF_ERROR(ValidateReason(receipt));
  const EnvelopeHeader& batch = receipt.batch;
  if (encoding == EnvelopeEncoding::kJson) return EncodeJsonReceipt(receipt, key);
  std::string out;
  out.append(kReceiptMagic);
  PutByte(&out, kFormatVersion);
  PutByte(&out, static_cast<uint8_t>(batch.lane));
  PutByte(&out, static_cast<uint8_t>(receipt.status));
  PutByte(&out, 0);  // flags
  PutLittleEndian(&out, batch.batch_sequence, 8);
  PutLittleEndian(&out, batch.first_lsn, 8);
  PutLittleEndian(&out, batch.last_lsn, 8);
  PutByte(&out, static_cast<uint8_t>(batch.gateway_id.size()));
  out.append(batch.gateway_id);
  PutByte(&out, static_cast<uint8_t>(batch.table.size()));
  out.append(batch.table);
  PutLittleEndian(&out, receipt.reason.size(), 2);
  out.append(receipt.reason);
  out.append(BinaryMac(key, out));
  return out;
}

Result<SyncReceipt> DecodeReceipt(std::string_view payload, std::string_view key) {
  if (payload.size() > kMaxReceiptPayloadBytes) {
    return Status::ResourceExhausted("receipt of " + std::to_string(payload.size()) +
                                     " bytes exceeds the limit of " +
                                     std::to_string(kMaxReceiptPayloadBytes));
  }
  CAIRN_RETURN_IF_ERROR(ValidateKey(key));
  if (!payload.empty() && payload.front() == '{') return DecodeJsonReceipt(payload, key);
  if (payload.starts_with(kReceiptMagic)) return DecodeBinaryReceipt(payload, key);
  if (payload.starts_with(kEnvelopeMagic)) return Status::Corruption("receipt: this is an envelope");
  return Status::Corruption("receipt: not a sync receipt (unknown first bytes)");
}

Result<std::string> SyncTopic(std::string_view prefix, std::string_view gateway_id, std::string_view table,
                              SyncLane lane) {
  CAIRN_RETURN_IF_ERROR(ValidateTopicPrefix(prefix));
  CAIRN_RETURN_IF_ERROR(ValidateGatewayId(gateway_id));
  CAIRN_RETURN_IF_ERROR(ValidateTableName(table));
  if (!IsKnownLane(static_cast<uint8_t>(lane))) {
    return Status::InvalidArgument("unknown sync lane " + std::to_string(static_cast<int>(lane)));
  }
  std::string topic(prefix);
  topic.append("/").append(gateway_id).append("/").append(table).append("/").append(SyncLaneName(lane));
  return topic;
}

Result<std::string> ReceiptTopic(std::string_view prefix, std::string_view gateway_id) {
  CAIRN_RETURN_IF_ERROR(ValidateTopicPrefix(prefix));
  CAIRN_RETURN_IF_ERROR(ValidateGatewayId(gateway_id));
  std::string topic(prefix);
  topic.append("/").append(gateway_id).append("/receipts");
  return topic;
}

Result<SyncTopicParts> ParseSyncTopic(std::string_view prefix, std::string_view topic) {
  CAIRN_RETURN_IF_ERROR(ValidateTopicPrefix(prefix));
  if (topic.size() <= prefix.size() || !topic.starts_with(prefix) || topic[prefix.size()] != '/') {
    return Status::InvalidArgument("topic '" + std::string(topic) + "' is not under '" + std::string(prefix) +
                                   "'");
  }
  std::string_view rest = topic.substr(prefix.size() + 1);
  std::vector<std::string_view> levels;
  while (true) {
    const size_t slash = rest.find('/');
    levels.push_back(rest.substr(0, slash));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  if (levels.size() != 3) {
    return Status::InvalidArgument("topic '" + std::string(topic) +
                                   "' is not <prefix>/<gateway_id>/<table>/<lane>");
  }
  SyncTopicParts parts;
  CAIRN_RETURN_IF_ERROR(ValidateGatewayId(levels[0]));
  CAIRN_RETURN_IF_ERROR(ValidateTableName(levels[1]));
  CAIRN_ASSIGN_OR_RETURN(parts.lane, ParseSyncLane(levels[2]));
  parts.gateway_id = std::string(levels[0]);
  parts.table = std::string(levels[1]);
  return parts;
}

std::string PartitionKey(std::string_view device_id, int shard) {
  char digits[16];
  std::snprintf(digits, sizeof(digits), "%02d", shard);
  std::string key(device_id);
  key.push_back('#');
  key.append(digits);
  return key;
}

}  // namespace cairn
