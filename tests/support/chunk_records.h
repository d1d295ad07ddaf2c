// Chunk records for the chunk codec's tests and its fuzzers' seeds.
//
// Header-only and without gtest, so that the seed generators can use it too.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "chunk/chunk_codec.h"

namespace cairn::test_chunks {

// A record with these values (parallel to the chunk's schema); the LSN is
// left 0, as the codec neither writes nor reads it.
inline ChunkRecord MakeRecord(int64_t timestamp, std::vector<Value> values, uint64_t version = 0,
                              int64_t ttl = 0) {
  ChunkRecord record;
  record.timestamp = timestamp;
  record.version = version;
  record.ttl = ttl;
  record.values = std::move(values);
  return record;
}

}  // namespace cairn::test_chunks
