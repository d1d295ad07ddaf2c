#include "storage/sqlite_wal_check.h"

#include <memory>
#include <vector>

namespace cairn {

namespace {

constexpr size_t kWalHeaderBytes = 32;
constexpr size_t kFrameHeaderBytes = 24;
constexpr uint32_t kWalMagic = 0x377f0682;  // | 1: checksums over big-endian words

uint32_t BigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

uint32_t LittleEndian32(const unsigned char* p) {
  return (uint32_t{p[3]} << 24) | (uint32_t{p[2]} << 16) | (uint32_t{p[1]} << 8) | uint32_t{p[0]};
}

// SQLite's WAL checksum: over pairs of 32-bit words, continuing (s1, s2).
void Checksum(bool big_endian, const unsigned char* data, size_t bytes, uint32_t* s1, uint32_t* s2) {
  for (size_t i = 0; i + 8 <= bytes; i += 8) {
    const uint32_t x0 = big_endian ? BigEndian32(data + i) : LittleEndian32(data + i);
    const uint32_t x1 = big_endian ? BigEndian32(data + i + 4) : LittleEndian32(data + i + 4);
    *s1 += x0 + *s2;
    *s2 += x1 + *s1;
  }
}

}  // namespace

Result<WalCheck> CheckSqliteWal(Env* env, const std::string& wal_path) {
  WalCheck check;
  if (!env->FileExists(wal_path)) return check;
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->OpenFile(wal_path, OpenMode::kReadOnly));
  CAIRN_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  if (size <= kWalHeaderBytes) return check;
  unsigned char header[kWalHeaderBytes];
  CAIRN_ASSIGN_OR_RETURN(size_t got, file->ReadAt(0, kWalHeaderBytes, reinterpret_cast<char*>(header)));
  const uint32_t magic = BigEndian32(header);
  const uint32_t page_size = BigEndian32(header + 8);
  const bool page_size_ok = page_size >= 512 && page_size <= 65536 && (page_size & (page_size - 1)) == 0;
  uint32_t s1 = 0, s2 = 0;
  const bool big_endian = (magic & 1) != 0;
  if (got == kWalHeaderBytes && (magic & ~1u) == kWalMagic) Checksum(big_endian, header, 24, &s1, &s2);
  if (got != kWalHeaderBytes || (magic & ~1u) != kWalMagic || !page_size_ok || s1 != BigEndian32(header + 24) ||
      s2 != BigEndian32(header + 28)) {
    // SQLite treats the whole WAL as empty; with frames after it, commits
    // may have been lost, and without a page size they cannot be told.
    check.header_damaged = true;
    return check;
  }
  const uint32_t salt1 = BigEndian32(header + 16), salt2 = BigEndian32(header + 20);
  const uint64_t frame_bytes = kFrameHeaderBytes + page_size;
  check.frames_in_file = (size - kWalHeaderBytes) / frame_bytes;
  std::vector<unsigned char> frame(frame_bytes);
  bool in_prefix = true;
  for (uint64_t i = 0; i < check.frames_in_file; ++i) {
    CAIRN_ASSIGN_OR_RETURN(size_t read, file->ReadAt(kWalHeaderBytes + i * frame_bytes, frame_bytes,
                                                     reinterpret_cast<char*>(frame.data())));
    if (read != frame_bytes) break;
    const uint32_t page = BigEndian32(frame.data());
    const uint32_t commit_size = BigEndian32(frame.data() + 4);
    const bool same_generation = BigEndian32(frame.data() + 8) == salt1 && BigEndian32(frame.data() + 12) == salt2;
    if (in_prefix) {
      uint32_t f1 = s1, f2 = s2;
      Checksum(big_endian, frame.data(), 8, &f1, &f2);
      Checksum(big_endian, frame.data() + kFrameHeaderBytes, page_size, &f1, &f2);
      if (page != 0 && same_generation && f1 == BigEndian32(frame.data() + 16) &&
          f2 == BigEndian32(frame.data() + 20)) {
        s1 = f1;
        s2 = f2;
        if (commit_size != 0) check.frames_committed = i + 1;
        continue;
      }
      in_prefix = false;
    }
    // Past the valid prefix: a commit frame of this generation is a
    // committed transaction SQLite will not see.
    if (same_generation && commit_size != 0) ++check.commits_lost;
  }
  return check;
}

}  // namespace cairn
