#include "chunk/crc32c.h"

#include <array>
#include <bit>
#include <cstdio>
#include <cstring>
#include <string>

namespace cairn {
namespace {

constexpr uint32_t kCastagnoliReflected = 0x82F63B78u;

// tables[0] is the classic byte-at-a-time table; tables[k][b] is the CRC of
// byte b followed by k zero bytes, which lets the main loop fold eight input
// bytes with eight independent lookups.
using SliceTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr SliceTables MakeSliceTables() {
  SliceTables tables{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kCastagnoliReflected : 0u);
    tables[0][byte] = crc;
  }
  for (uint32_t byte = 0; byte < 256; ++byte) {
    for (size_t k = 1; k < 8; ++k) {
      uint32_t previous = tables[k - 1][byte];
      tables[k][byte] = (previous >> 8) ^ tables[0][previous & 0xFFu];
    }
  }
  return tables;
}

constexpr SliceTables kTables = MakeSliceTables();

inline uint32_t LoadLittleEndian32(const unsigned char* p) {
  uint32_t word;
  std::memcpy(&word, p, sizeof(word));
  if constexpr (std::endian::native == std::endian::big) word = __builtin_bswap32(word);
  return word;
}

}  // namespace

uint32_t Crc32cExtend(uint32_t crc, std::string_view data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t size = data.size();
  uint32_t state = ~crc;
  while (size >= 8) {
    uint32_t low = LoadLittleEndian32(p) ^ state;
    uint32_t high = LoadLittleEndian32(p + 4);
    state = kTables[7][low & 0xFFu] ^ kTables[6][(low >> 8) & 0xFFu] ^ kTables[5][(low >> 16) & 0xFFu] ^
            kTables[4][low >> 24] ^ kTables[3][high & 0xFFu] ^ kTables[2][(high >> 8) & 0xFFu] ^
            kTables[1][(high >> 16) & 0xFFu] ^ kTables[0][high >> 24];
    p += 8;
    size -= 8;
  }
  while (size > 0) {
    state = (state >> 8) ^ kTables[0][(state ^ *p) & 0xFFu];
    ++p;
    --size;
  }
  return ~state;
}

uint32_t Crc32c(std::string_view data) { return Crc32cExtend(0, data); }

Result<std::string_view> VerifyTrailingCrc32c(std::string_view bytes, std::string_view what) {
  constexpr size_t kChecksumBytes = 4;
  if (bytes.size() < kChecksumBytes) {
    return Status::Corruption(std::string(what) + ": " + std::to_string(bytes.size()) +
                              " bytes is too short");
  }
  const std::string_view payload = bytes.substr(0, bytes.size() - kChecksumBytes);
  const auto* tail = reinterpret_cast<const unsigned char*>(bytes.data() + payload.size());
  const uint32_t stored = static_cast<uint32_t>(tail[0]) | static_cast<uint32_t>(tail[1]) << 8 |
                          static_cast<uint32_t>(tail[2]) << 16 | static_cast<uint32_t>(tail[3]) << 24;
  const uint32_t computed = Crc32c(payload);
  if (stored != computed) {
    char message[96];
    std::snprintf(message, sizeof(message), ": checksum mismatch (stored 0x%08x, computed 0x%08x)",
                  static_cast<unsigned>(stored), static_cast<unsigned>(computed));
    return Status::Corruption(std::string(what) + message);
  }
  return payload;
}

}  // namespace cairn
