#include "crash_unsynced_writes.h"

#include <algorithm>
#include <set>

namespace cairn::crash {

void ApplyUnsyncedWrite(const UnsyncedWrite& write, std::string* contents) {
  if (write.truncate) {
    contents->resize(static_cast<size_t>(write.offset), '\0');
    return;
  }
  const size_t offset = static_cast<size_t>(write.offset);
  if (contents->size() < offset + write.bytes.size()) contents->resize(offset + write.bytes.size(), '\0');
  contents->replace(offset, write.bytes.size(), write.bytes);
}

uint64_t UnsyncedBytes(const UnsyncedWrite& write, uint64_t size_before) {
  if (!write.truncate) return write.bytes.size();
  return write.offset > size_before ? write.offset - size_before : size_before - write.offset;
}

std::string_view TornFillName(TornFill fill) {
  switch (fill) {
    case TornFill::kOldBytes:
      return "old bytes";
    case TornFill::kZeros:
      return "zeros";
    case TornFill::kGarbage:
      return "garbage";
  }
  return "?";
}

FileAfterCut CutWithTornWrite(const std::string& durable, const std::vector<UnsyncedWrite>& writes,
                              uint32_t sector_bytes, Rng& rng) {
  FileAfterCut after;
  const size_t count = writes.size();
  // The write in flight: most often the newest (a log's last record), but
  // any earlier one too (a disk that got behind).
  const size_t in_flight = rng.Percent(50) ? count - 1 : rng.Index(count);
  after.contents = durable;
  for (size_t i = 0; i < in_flight; ++i) ApplyUnsyncedWrite(writes[i], &after.contents);
  const UnsyncedWrite& write = writes[in_flight];
  const std::string position = std::to_string(in_flight + 1) + " of " + std::to_string(count);
  const std::string later = std::to_string(count - in_flight - 1) + " later writes lost";

  if (write.truncate) {
    const bool done = rng.Percent(50);
    if (done) ApplyUnsyncedWrite(write, &after.contents);
    after.description = "truncation " + position + " to " + std::to_string(write.offset) +
                        (done ? " done, " : " not done, ") + later;
    return after;
  }

  const uint64_t begin = write.offset;
  const uint64_t end = begin + write.bytes.size();
  // The first byte that did not get its new value, and the end of the part of
  // its sector that the write covers.
  const uint64_t tear = begin + static_cast<uint64_t>(rng.Between(0, static_cast<int64_t>(write.bytes.size()) - 1));
  const uint64_t fill_end = std::min<uint64_t>(end, (tear / sector_bytes + 1) * sector_bytes);
  const TornFill fill = static_cast<TornFill>(rng.Between(0, 2));

  std::string& contents = after.contents;
  if (contents.size() < tear) contents.resize(static_cast<size_t>(tear), '\0');
  contents.replace(static_cast<size_t>(begin), static_cast<size_t>(tear - begin), write.bytes, 0,
                   static_cast<size_t>(tear - begin));
  if (fill != TornFill::kOldBytes) {
    if (contents.size() < fill_end) contents.resize(static_cast<size_t>(fill_end), '\0');
    for (uint64_t i = tear; i < fill_end; ++i) {
      contents[static_cast<size_t>(i)] = fill == TornFill::kZeros ? '\0' : static_cast<char>(rng.Next() & 0xFF);
    }
  }
  after.torn = true;
  after.description = "torn write " + position + " at [" + std::to_string(begin) + ", " + std::to_string(end) +
                      "): " + std::to_string(tear - begin) + " bytes kept, the torn sector's next " +
                      std::to_string(fill_end - tear) + " bytes " + std::string(TornFillName(fill)) + ", " +
                      std::to_string(end - fill_end) + " later bytes and " + later;
  return after;
}

FileAfterCut CutWithReorderedWrites(const std::string& durable, const std::vector<UnsyncedWrite>& writes,
                                    uint32_t sector_bytes, Rng& rng) {
  // The newest state, and every sector some write or truncation touched.
  std::string newest = durable;
  std::set<uint64_t> touched;
  const auto touch = [&](uint64_t from, uint64_t to) {
    for (uint64_t sector = from / sector_bytes; from < to && sector <= (to - 1) / sector_bytes; ++sector) {
      touched.insert(sector);
    }
  };
  for (const UnsyncedWrite& write : writes) {
    if (write.truncate) {
      touch(std::min<uint64_t>(write.offset, newest.size()), std::max<uint64_t>(write.offset, newest.size()));
    } else {
      touch(write.offset, write.offset + write.bytes.size());
    }
    ApplyUnsyncedWrite(write, &newest);
  }

  FileAfterCut after;
  bool size_kept = true;
  uint64_t size = newest.size();
  if (newest.size() != durable.size()) {
    size_kept = rng.Percent(50);
    if (!size_kept) size = durable.size();
  }
  // Bytes of the old state, zeros where it had none.
  const auto old_byte = [&](uint64_t i) { return i < durable.size() ? durable[static_cast<size_t>(i)] : '\0'; };
  std::string& contents = after.contents;
  contents = durable;
  contents.resize(static_cast<size_t>(size), '\0');
  for (uint64_t sector : touched) {
    // Drawn for every sector, even one past the kept size, so that the
    // draws do not depend on the size decision.
    const bool kept = rng.Percent(50);
    (kept ? after.sectors_kept : after.sectors_lost) += 1;
    if (!kept) continue;
    const uint64_t from = sector * sector_bytes;
    const uint64_t to = std::min<uint64_t>(size, from + sector_bytes);
    for (uint64_t i = from; i < to; ++i) {
      contents[static_cast<size_t>(i)] = i < newest.size() ? newest[static_cast<size_t>(i)] : old_byte(i);
    }
  }
  after.description = "reordered " + std::to_string(writes.size()) + " writes: " +
                      std::to_string(after.sectors_kept) + " of " + std::to_string(touched.size()) +
                      " sectors kept, size " + std::to_string(durable.size()) + " -> " +
                      std::to_string(newest.size()) + (size_kept ? " kept" : " lost");
  return after;
}

}  // namespace cairn::crash
