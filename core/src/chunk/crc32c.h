// CRC-32C (Castagnoli), the checksum of chunks and log records.
//
// Reflected polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF: the
// same CRC as iSCSI and the SSE4.2 / ARMv8 crc32c instructions, so values can
// be checked with common tools. Computed in portable C++ (slicing-by-8 tables)
// because the ARM boards cairn targets do not all have the CRC extension.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "cairn/platform/status.h"

namespace cairn {

// CRC-32C of `data`. Crc32c("123456789") == 0xE3069283; Crc32c("") == 0.
uint32_t Crc32c(std::string_view data);

// CRC-32C of A followed by `data`, given `crc` == Crc32c(A). Lets a caller
// checksum a record assembled from pieces without concatenating them:
// Crc32cExtend(Crc32c(a), b) == Crc32c(a + b).
uint32_t Crc32cExtend(uint32_t crc, std::string_view data);

// For blobs that end in a little-endian CRC-32C of everything before it:
// returns the bytes the checksum covers, or Corruption naming `what` when
// the blob is shorter than the checksum or the checksum does not match.
Result<std::string_view> VerifyTrailingCrc32c(std::string_view bytes, std::string_view what);

}  // namespace cairn
