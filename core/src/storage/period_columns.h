// The encodings of a period file's text and blob columns (period_format.md
// §2 and §3): field lists and dimensions as flat JSON, the LSNs of a chunk's
// records as one integer sequence, integers kept in the meta table, and
// unsigned integers in signed columns.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "storage/period_file.h"

namespace cairn::period_columns {

// SQLite integers are signed; unsigned values are stored as their two's
// complement bit pattern (values above 2^63 show as negative in the shell).
inline int64_t ToStored(uint64_t value) { return static_cast<int64_t>(value); }
inline uint64_t FromStored(int64_t value) { return static_cast<uint64_t>(value); }

// {"name":code,...} in the chunk's column order (type codes in §3).
std::string EncodeFields(const std::vector<ChunkField>& fields);
Result<std::vector<ChunkField>> DecodeFields(std::string_view text);

// {"key":"value",...} with keys sorted.
std::string EncodeDimensions(const std::map<std::string, std::string>& dimensions);
Result<std::map<std::string, std::string>> DecodeDimensions(std::string_view text);

// The integer stored under `key` in a file's meta table; Corruption naming
// the key when it is missing or not an integer.
Result<int64_t> ParseStoredInteger(const std::map<std::string, std::string>& meta, const std::string& key);

// The LSN of each record of `chunk`, in record order; decoding checks the
// count and that each lies within [min_lsn, max_lsn].
std::string EncodeLsns(const std::vector<uint64_t>& lsns);
Result<std::vector<uint64_t>> DecodeLsns(std::string_view bytes, const ChunkRow& chunk);

}  // namespace cairn::period_columns
