// The ingest service's gateway keys: which HMAC key verifies the envelopes of
// which gateway (envelope_format.md §2).
//
// Keys file: one gateway per line, `<gateway_id> <key as hex>`, the key at
// least 32 hex digits (16 bytes) and an even number of them; blank lines and
// lines whose first non-blank character is '#' are ignored; fields are
// separated by spaces or tabs.
//
// Thread-safety: pure functions; the map is a plain value.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

namespace cairn {

// gateway id -> key bytes.
using GatewayKeys = std::map<std::string, std::string, std::less<>>;

// Parses the text of a keys file. InvalidArgument naming the line (1-based)
// and the problem: missing key, extra words, bad hex, short key, invalid
// gateway id (ValidateGatewayId), a gateway listed twice. `source` names the
// file in messages.
Result<GatewayKeys> ParseGatewayKeys(std::string_view text, std::string_view source);

// Reads and parses the keys file at `path` through `env`. NotFound when it is
// missing; errors as ParseGatewayKeys; InvalidArgument when it lists no
// gateway.
Result<GatewayKeys> LoadGatewayKeys(Env* env, const std::string& path);

}  // namespace cairn
