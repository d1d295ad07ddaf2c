// The payload of one write-ahead log record: every record one group commit
// stored, in LSN order (format in write_batch_format.md).
//
// Thread-safety: plain functions over values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cairn/core/record.h"
#include "cairn/platform/status.h"

namespace cairn {

// A record as the log carries it: the client's record after validation and
// defaulting (ttl resolved), with its table.
struct LoggedRecord {
  const std::string* table = nullptr;  // encoding input only
  const Record* record = nullptr;      // encoding input only
  int64_t ttl = 0;                     // resolved ttl (table default applied)
};

// Encodes records into one payload.
std::string EncodeWriteBatch(const std::vector<LoggedRecord>& records);

struct DecodedWriteRecord {
  std::string table;
  Record record;  // ttl already resolved
};

// Decodes a payload; Corruption when it is malformed (the log's CRC makes
// that a bug or a format mismatch, never a torn write).
Result<std::vector<DecodedWriteRecord>> DecodeWriteBatch(std::string_view payload);

}  // namespace cairn
