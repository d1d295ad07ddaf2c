#include "chunk/integer_sequence.h"

#include <algorithm>
#include <vector>

namespace cairn::chunk_coding {
namespace {

void AppendRuns(std::span<const int64_t> values, std::string* out) {
  size_t run_count = 1;
  for (size_t i = 1; i < values.size(); ++i) run_count += values[i] != values[i - 1];
  PutByte(out, static_cast<uint8_t>(SequenceMode::kRuns));
  PutVarint(out, run_count);
  size_t start = 0;
  for (size_t i = 1; i <= values.size(); ++i) {
    if (i == values.size() || values[i] != values[start]) {
      PutSignedVarint(out, values[start]);
      PutVarint(out, i - start);
      start = i;
    }
  }
}

void AppendFrames(std::span<const int64_t> values, std::string* out) {
  BitWriter writer(out);
  for (size_t start = 0; start < values.size(); start += kValuesPerFrame) {
    std::span<const int64_t> frame = values.subspan(start, std::min(kValuesPerFrame, values.size() - start));
    auto [lowest, highest] = std::minmax_element(frame.begin(), frame.end());
    uint64_t base = static_cast<uint64_t>(*lowest);
    unsigned width = BitWidth(static_cast<uint64_t>(*highest) - base);
    PutSignedVarint(out, *lowest);
    PutByte(out, static_cast<uint8_t>(width));
    if (width == 0) continue;
    for (int64_t value : frame) writer.Write(static_cast<uint64_t>(value) - base, width);
    writer.Flush();
  }
}

void AppendDelta(std::span<const int64_t> values, std::string* out) {
  std::vector<int64_t> deltas(values.size() - 1);
  for (size_t i = 1; i < values.size(); ++i) {
    deltas[i - 1] =
        static_cast<int64_t>(static_cast<uint64_t>(values[i]) - static_cast<uint64_t>(values[i - 1]));
  }
  PutByte(out, static_cast<uint8_t>(SequenceMode::kDelta));
  PutSignedVarint(out, values[0]);
  AppendFrames(deltas, out);
}

// Unpacks `length` values of `width` (1..64) bits from `data`, adding `base`.
// `available` bytes from `data` may be read, at least the packed size. Values
// whose 8-byte window lies within `available` take the branch-free loop.
void UnpackFrame(const unsigned char* data, size_t available, unsigned width, size_t length, uint64_t base,
                 int64_t* out) {
  size_t i = 0;
  if (width <= 56 && available >= 8) {
    // Value i starts in byte floor(i * width / 8), which must be <= available - 8.
    const uint64_t loadable_bits = static_cast<uint64_t>(available - 7) * 8;
    const size_t safe = static_cast<size_t>(std::min<uint64_t>(length, (loadable_bits + width - 1) / width));
    const uint64_t mask = LowBitsMask(width);
    uint64_t position = 0;
    for (; i < safe; ++i) {
      uint64_t word = LoadLittleEndian64(data + (position >> 3));
      out[i] = static_cast<int64_t>(base + ((word >> (position & 7)) & mask));
      position += width;
    }
  }
  if (i == length) return;
  BitReader bits(data, available);
  bits.SkipBits(static_cast<uint64_t>(i) * width);
  for (; i < length; ++i) out[i] = static_cast<int64_t>(base + bits.Read(width));
}

Status DecodeFrames(ByteReader* reader, std::span<int64_t> out) {
  for (size_t start = 0; start < out.size(); start += kValuesPerFrame) {
    size_t length = std::min(kValuesPerFrame, out.size() - start);
    int64_t base;
    uint8_t width;
    if (!reader->ReadSignedVarint(&base)) return Status::Corruption("truncated or malformed frame base");
    if (!reader->ReadByte(&width)) return Status::Corruption("truncated frame bit width");
    if (width > 64) return Status::Corruption("frame bit width " + std::to_string(width) + " exceeds 64");
    uint64_t packed_bytes = (static_cast<uint64_t>(length) * width + 7) / 8;
    if (packed_bytes > reader->remaining()) {
      return Status::Corruption("frame of " + std::to_string(length) + " values at " + std::to_string(width) +
                                " bits needs " + std::to_string(packed_bytes) + " bytes, " +
                                std::to_string(reader->remaining()) + " left");
    }
    int64_t* destination = out.data() + start;
    if (width == 0) {
      std::fill(destination, destination + length, base);
      continue;
    }
    UnpackFrame(reader->position(), reader->remaining(), width, length, static_cast<uint64_t>(base),
                destination);
    reader->Skip(static_cast<size_t>(packed_bytes));
  }
  return Status::Ok();
}

Status DecodeRuns(ByteReader* reader, std::span<int64_t> out) {
  uint64_t run_count;
  if (!reader->ReadVarint(&run_count)) return Status::Corruption("truncated run count");
  if (run_count == 0 || run_count > out.size()) {
    return Status::Corruption("run count " + std::to_string(run_count) + " invalid for " +
                              std::to_string(out.size()) + " values");
  }
  size_t filled = 0;
  for (uint64_t run = 0; run < run_count; ++run) {
    int64_t value;
    uint64_t length;
    if (!reader->ReadSignedVarint(&value) || !reader->ReadVarint(&length)) {
      return Status::Corruption("truncated run");
    }
    if (length == 0 || length > out.size() - filled) {
      return Status::Corruption("run length " + std::to_string(length) + " invalid with " +
                                std::to_string(out.size() - filled) + " values left");
    }
    std::fill(out.begin() + filled, out.begin() + filled + length, value);
    filled += static_cast<size_t>(length);
  }
  if (filled != out.size()) {
    return Status::Corruption("runs cover " + std::to_string(filled) + " of " + std::to_string(out.size()) +
                              " values");
  }
  return Status::Ok();
}

}  // namespace

void EncodeIntegerSequence(std::span<const int64_t> values, std::string* out) {
  if (values.empty()) return;
  std::string best;
  AppendRuns(values, &best);
  std::string candidate;
  PutByte(&candidate, static_cast<uint8_t>(SequenceMode::kFrames));
  AppendFrames(values, &candidate);
  if (candidate.size() < best.size()) best.swap(candidate);
  if (values.size() > 1) {
    candidate.clear();
    AppendDelta(values, &candidate);
    if (candidate.size() < best.size()) best.swap(candidate);
  }
  out->append(best);
}

Status DecodeIntegerSequence(ByteReader* reader, std::span<int64_t> out) {
  if (out.empty()) return Status::Ok();
  uint8_t mode;
  if (!reader->ReadByte(&mode)) return Status::Corruption("truncated sequence mode");
  switch (static_cast<SequenceMode>(mode)) {
    case SequenceMode::kRuns:
      return DecodeRuns(reader, out);
    case SequenceMode::kFrames:
      return DecodeFrames(reader, out);
    case SequenceMode::kDelta: {
      if (!reader->ReadSignedVarint(&out[0])) return Status::Corruption("truncated first value of deltas");
      CAIRN_RETURN_IF_ERROR(DecodeFrames(reader, out.subspan(1)));
      uint64_t running = static_cast<uint64_t>(out[0]);
      for (size_t i = 1; i < out.size(); ++i) {
        running += static_cast<uint64_t>(out[i]);
        out[i] = static_cast<int64_t>(running);
      }
      return Status::Ok();
    }
  }
  return Status::Corruption("unknown sequence mode " + std::to_string(mode));
}

}  // namespace cairn::chunk_coding
