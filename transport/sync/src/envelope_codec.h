// What envelope.cc (the binary encoding, the public entry points) and
// envelope_json.cc (the JSON encoding) share. Private to cairn_sync_envelope.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "cairn/platform/status.h"
#include "cairn/sync/sync_envelope.h"

namespace cairn::envelope_detail {

// Both encodings carry this format version (envelope_format.md).
inline constexpr uint8_t kFormatVersion = 1;
// An HMAC-SHA256 is 32 bytes; JSON carries it as 64 lowercase hex digits.
inline constexpr size_t kMacBytes = 32;

inline std::span<const uint8_t> AsBytes(std::string_view text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

inline bool IsKnownLane(uint8_t code) { return code <= static_cast<uint8_t>(SyncLane::kArchive); }

// Checks an encoder's input (InvalidArgument when it is out of the format's
// range); decoders pass what they read through AsCorruption.
Status ValidateHeader(const EnvelopeHeader& header);
Status ValidateRecordCount(const EnvelopeHeader& header, uint64_t record_count);
Status ValidateReason(const SyncReceipt& receipt);

// A decoder reports content that an encoder would call InvalidArgument as
// Corruption: in a received message it means damaged or forged bytes.
Status AsCorruption(const Status& status, std::string_view what);

// The JSON encoding (envelope_json.cc). The callers in envelope.cc have
// checked the key, the header and the size limits the encodings share.
Result<std::string> EncodeJsonEnvelope(const EnvelopeHeader& header, std::span<const RecordRow> records,
                                       std::string_view key, const EnvelopeLimits& limits);
Result<DecodedEnvelope> DecodeJsonEnvelope(std::string_view payload, std::string_view key,
                                           const EnvelopeLimits& limits);
Result<std::string> EncodeJsonReceipt(const SyncReceipt& receipt, std::string_view key);
Result<SyncReceipt> DecodeJsonReceipt(std::string_view payload, std::string_view key);

}  // namespace cairn::envelope_detail
