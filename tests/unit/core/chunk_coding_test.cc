// Tests of the chunk format's building blocks: varints, zigzag, bit streams,
// the integer sequence and the double column encodings.
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chunk/coding.h"
#include "chunk/double_column.h"
#include "chunk/integer_sequence.h"

namespace cairn::chunk_coding {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(ChunkCodingTest, ZigZagMapsSmallMagnitudesToSmallCodes) {
  EXPECT_EQ(ZigZagEncode(0), 0u);
  EXPECT_EQ(ZigZagEncode(-1), 1u);
  EXPECT_EQ(ZigZagEncode(1), 2u);
  EXPECT_EQ(ZigZagEncode(-2), 3u);
  EXPECT_EQ(ZigZagEncode(kMax), 0xFFFFFFFFFFFFFFFEull);
  EXPECT_EQ(ZigZagEncode(kMin), 0xFFFFFFFFFFFFFFFFull);
  for (int64_t v :
       {int64_t{0}, int64_t{-1}, int64_t{1}, kMin, kMax, kMin + 1, kMax - 1, int64_t{123456789}}) {
    EXPECT_EQ(ZigZagDecode(ZigZagEncode(v)), v);
  }
}

TEST(ChunkCodingTest, VarintRoundTripsAndRejectsOverlong) {
  std::string encoded;
  const std::vector<uint64_t> values = {0, 1, 127, 128, 16383, 16384, uint64_t{1} << 35, ~uint64_t{0}};
  for (uint64_t v : values) {
    PutVarint(&encoded, v);
  }
  EXPECT_EQ(VarintSize(~uint64_t{0}), 10u);
  ByteReader reader(encoded);
  for (uint64_t v : values) {
    uint64_t decoded;
    ASSERT_TRUE(reader.ReadVarint(&decoded));
    EXPECT_EQ(decoded, v);
  }
  EXPECT_TRUE(reader.empty());

  // A tenth byte above 1 would overflow 64 bits.
  std::string overflow(9, '\xFF');
  overflow.push_back('\x02');
  ByteReader overflowing(overflow);
  uint64_t ignored;
  EXPECT_FALSE(overflowing.ReadVarint(&ignored));
  // Eleven continuation bytes never terminate within 64 bits.
  const std::string eleven_continuations(11, '\x80');
  ByteReader endless(eleven_continuations);
  EXPECT_FALSE(endless.ReadVarint(&ignored));
  const std::string lone_continuation(1, '\x80');
  ByteReader truncated(lone_continuation);
  EXPECT_FALSE(truncated.ReadVarint(&ignored));
}

TEST(ChunkCodingTest, BitStreamRoundTripsEveryWidthAtEveryAlignment) {
  std::mt19937_64 random(7);
  std::vector<std::pair<uint64_t, unsigned>> written;
  std::string stream;
  BitWriter writer(&stream);
  for (int round = 0; round < 3; ++round) {
    for (unsigned width = 0; width <= 64; ++width) {
      uint64_t value = random() & LowBitsMask(width);
      writer.Write(value, width);
      written.emplace_back(value, width);
    }
  }
  writer.Flush();
  uint64_t total_bits = 0;
  for (const auto& entry : written) total_bits += entry.second;
  EXPECT_EQ(stream.size(), (total_bits + 7) / 8);

  BitReader reader(reinterpret_cast<const unsigned char*>(stream.data()), stream.size());
  for (const auto& [value, width] : written) {
    uint64_t decoded;
    ASSERT_TRUE(reader.ReadChecked(width, &decoded));
    EXPECT_EQ(decoded, value) << "width " << width;
  }
  uint64_t ignored;
  EXPECT_FALSE(reader.ReadChecked(8, &ignored));  // only padding is left
}

TEST(ChunkCodingTest, BitStreamIsLsbFirst) {
  std::string stream;
  BitWriter writer(&stream);
  writer.Write(1, 1);
  writer.Write(0, 1);
  writer.Write(0x3F, 6);
  writer.Write(0x5, 3);
  writer.Flush();
  ASSERT_EQ(stream.size(), 2u);
  EXPECT_EQ(static_cast<uint8_t>(stream[0]), 0xFDu);  // 1, 0, then six ones
  EXPECT_EQ(static_cast<uint8_t>(stream[1]), 0x05u);
}

std::vector<int64_t> RoundTripSequence(const std::vector<int64_t>& values, uint8_t* mode = nullptr) {
  std::string encoded;
  EncodeIntegerSequence(values, &encoded);
  if (mode != nullptr && !encoded.empty()) *mode = static_cast<uint8_t>(encoded[0]);
  ByteReader reader(encoded);
  std::vector<int64_t> decoded(values.size());
  Status status = DecodeIntegerSequence(&reader, decoded);
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_TRUE(reader.empty());
  return decoded;
}

TEST(IntegerSequenceTest, EmptyTakesNoBytes) {
  std::string encoded;
  EncodeIntegerSequence({}, &encoded);
  EXPECT_TRUE(encoded.empty());
}

TEST(IntegerSequenceTest, PicksRunsForConstants) {
  std::vector<int64_t> values(1000, 42);
  uint8_t mode = 0xFF;
  EXPECT_EQ(RoundTripSequence(values, &mode), values);
  EXPECT_EQ(mode, static_cast<uint8_t>(SequenceMode::kRuns));
}

TEST(IntegerSequenceTest, PicksFramesForNoiseAroundALevel) {
  std::mt19937_64 random(3);
  std::vector<int64_t> values;
  for (int i = 0; i < 1000; ++i) values.push_back(1000 + static_cast<int64_t>(random() % 16));
  uint8_t mode = 0xFF;
  EXPECT_EQ(RoundTripSequence(values, &mode), values);
  EXPECT_EQ(mode, static_cast<uint8_t>(SequenceMode::kFrames));
}

TEST(IntegerSequenceTest, PicksDeltaForRandomWalks) {
  std::mt19937_64 random(4);
  std::vector<int64_t> values;
  int64_t level = 1'000'000'000;
  for (int i = 0; i < 1000; ++i) values.push_back(level += static_cast<int64_t>(random() % 3) - 1);
  uint8_t mode = 0xFF;
  EXPECT_EQ(RoundTripSequence(values, &mode), values);
  EXPECT_EQ(mode, static_cast<uint8_t>(SequenceMode::kDelta));
}

TEST(IntegerSequenceTest, ExtremesWrapWithoutLoss) {
  std::vector<int64_t> values;
  for (int i = 0; i < 300; ++i) {
    values.push_back(i % 3 == 0 ? kMin : i % 3 == 1 ? kMax : (i % 2 ? -1 : 0));
  }
  EXPECT_EQ(RoundTripSequence(values), values);
  EXPECT_EQ(RoundTripSequence({kMin}), std::vector<int64_t>{kMin});
  EXPECT_EQ(RoundTripSequence({kMax, kMin}), (std::vector<int64_t>{kMax, kMin}));
  EXPECT_EQ(RoundTripSequence({kMin, kMax, kMin, kMax}), (std::vector<int64_t>{kMin, kMax, kMin, kMax}));
}

TEST(IntegerSequenceTest, RandomLengthsAndSpreadsRoundTrip) {
  std::mt19937_64 random(11);
  for (int round = 0; round < 200; ++round) {
    size_t length = 1 + random() % 400;
    unsigned spread_bits = static_cast<unsigned>(random() % 65);
    std::vector<int64_t> values(length);
    for (int64_t& v : values) v = static_cast<int64_t>(random() & LowBitsMask(spread_bits)) - 7;
    EXPECT_EQ(RoundTripSequence(values), values) << "round " << round;
  }
}

TEST(IntegerSequenceTest, RejectsMalformedInput) {
  auto decode = [](const std::string& bytes, size_t count) {
    ByteReader reader(bytes);
    std::vector<int64_t> out(count);
    return DecodeIntegerSequence(&reader, out);
  };
  EXPECT_TRUE(decode("", 1).Is(StatusCode::kCorruption));
  EXPECT_TRUE(decode("\x07", 1).Is(StatusCode::kCorruption));  // unknown mode
  // Frames: base 0, width 65.
  std::string wide = std::string("\x01\x00", 2) + "\x41";
  Status status = decode(wide, 1);
  EXPECT_TRUE(status.Is(StatusCode::kCorruption));
  EXPECT_NE(status.message().find("bit width 65"), std::string::npos) << status.ToString();
  // Frames: 128 values at 64 bits need 1024 bytes; only 3 are there.
  EXPECT_TRUE(decode(std::string("\x01\x00\x40xyz", 6), 128).Is(StatusCode::kCorruption));
  // Runs: zero runs, a zero-length run, runs longer than the count, runs too short.
  EXPECT_TRUE(decode(std::string("\x00\x00", 2), 4).Is(StatusCode::kCorruption));
  EXPECT_TRUE(decode(std::string("\x00\x01\x02\x00", 4), 4).Is(StatusCode::kCorruption));
  EXPECT_TRUE(decode(std::string("\x00\x01\x02\x05", 4), 4).Is(StatusCode::kCorruption));
  EXPECT_TRUE(decode(std::string("\x00\x01\x02\x03", 4), 4).Is(StatusCode::kCorruption));
  EXPECT_TRUE(decode(std::string("\x00\x01\x02\x04", 4), 4).ok());
  // A forged run count far beyond the values must not be trusted.
  EXPECT_TRUE(decode(std::string("\x00\xFF\xFF\xFF\x7F", 5), 4).Is(StatusCode::kCorruption));
}

std::vector<double> RoundTripDoubles(const std::vector<double>& values, uint8_t* mode = nullptr,
                                     size_t* size = nullptr) {
  std::string encoded;
  EncodeDoubles(values, &encoded);
  if (mode != nullptr) *mode = static_cast<uint8_t>(encoded[0]);
  if (size != nullptr) *size = encoded.size();
  ByteReader reader(encoded);
  std::vector<double> decoded(values.size());
  std::vector<int64_t> scratch;
  Status status = DecodeDoubles(&reader, decoded, &scratch);
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_TRUE(reader.empty());
  return decoded;
}

void ExpectBitIdentical(const std::vector<double>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint64_t>(actual[i]), std::bit_cast<uint64_t>(expected[i]))
        << "value " << i << ": " << actual[i] << " vs " << expected[i];
  }
}

TEST(DoubleColumnTest, SensorDecimalsUseDecimalModeAndPackTightly) {
  std::mt19937_64 random(5);
  std::vector<double> values;
  int64_t centi_degrees = 2150;
  for (int i = 0; i < 1000; ++i) {
    centi_degrees += static_cast<int64_t>(random() % 3) - 1;
    values.push_back(static_cast<double>(centi_degrees) / 100.0);
  }
  uint8_t mode = 0xFF;
  size_t size = 0;
  ExpectBitIdentical(RoundTripDoubles(values, &mode, &size), values);
  EXPECT_EQ(mode, static_cast<uint8_t>(DoubleMode::kDecimal));
  EXPECT_LT(size, 300u);  // 2 bits per value plus frame headers
}

TEST(DoubleColumnTest, DecimalsParsedFromText) {
  std::vector<double> values;
  for (const char* text :
       {"1013.2", "1013.3", "0.1", "0.29", "99.99", "-40.05", "3.0", "1e-5", "123456.789"}) {
    values.push_back(std::strtod(text, nullptr));
  }
  uint8_t mode = 0xFF;
  ExpectBitIdentical(RoundTripDoubles(values, &mode), values);
  EXPECT_EQ(mode, static_cast<uint8_t>(DoubleMode::kDecimal));
}

TEST(DoubleColumnTest, SpecialValuesRoundTripBitExactly) {
  const double denormal_min = std::numeric_limits<double>::denorm_min();
  std::vector<double> specials = {
      -0.0,         0.0,      denormal_min, -denormal_min, DBL_MIN,          -DBL_MIN,
      DBL_MAX,      -DBL_MAX, 1e-300,       1e300,         std::numbers::pi, -std::numbers::e,
      4.5e15 + 0.5, 9.2e18,   -9.3e18,      1e-17,         0.1 + 0.2};
  ExpectBitIdentical(RoundTripDoubles(specials), specials);
  ExpectBitIdentical(RoundTripDoubles({-0.0}), {-0.0});
  ExpectBitIdentical(RoundTripDoubles({denormal_min}), {denormal_min});
  for (double v : specials) ExpectBitIdentical(RoundTripDoubles({v, v, v}), {v, v, v});
}

TEST(DoubleColumnTest, DecimalsWithAFewExceptions) {
  std::vector<double> values;
  for (int i = 0; i < 500; ++i) values.push_back(20.0 + static_cast<double>(i % 50) / 10.0);
  values[0] = -0.0;
  values[17] = std::numbers::pi;
  values[250] = std::numeric_limits<double>::denorm_min();
  values[499] = 1e300;
  uint8_t mode = 0xFF;
  ExpectBitIdentical(RoundTripDoubles(values, &mode), values);
  EXPECT_EQ(mode, static_cast<uint8_t>(DoubleMode::kDecimal));
}

TEST(DoubleColumnTest, ArbitraryBitsFallBackToXor) {
  std::mt19937_64 random(6);
  std::vector<double> values;
  while (values.size() < 300) {
    double v = std::bit_cast<double>(random());
    if (std::isfinite(v)) values.push_back(v);
  }
  uint8_t mode = 0xFF;
  ExpectBitIdentical(RoundTripDoubles(values, &mode), values);
  EXPECT_EQ(mode, static_cast<uint8_t>(DoubleMode::kXor));

  std::vector<double> smooth;
  for (int i = 0; i < 300; ++i) smooth.push_back(std::sin(i * 0.01));
  ExpectBitIdentical(RoundTripDoubles(smooth), smooth);
}

TEST(DoubleColumnTest, RejectsNonFiniteAndMalformed) {
  auto decode = [](const std::string& bytes, size_t count) {
    ByteReader reader(bytes);
    std::vector<double> out(count);
    std::vector<int64_t> scratch;
    return DecodeDoubles(&reader, out, &scratch);
  };
  std::string infinity_xor(1, '\x01');
  PutFixed64(&infinity_xor, std::bit_cast<uint64_t>(std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(decode(infinity_xor, 1).Is(StatusCode::kCorruption));
  // Decimal, exponent 0, one run of integer 0, one exception at position 0.
  const std::string one_exception("\x00\x00\x00\x01\x00\x01\x01\x00", 8);
  std::string nan_exception = one_exception;
  PutFixed64(&nan_exception, 0x7FF8000000000000ull);
  EXPECT_TRUE(decode(nan_exception, 1).Is(StatusCode::kCorruption));
  std::string ok_exception = one_exception;
  PutFixed64(&ok_exception, std::bit_cast<uint64_t>(-0.0));
  EXPECT_TRUE(decode(ok_exception, 1).ok());
  EXPECT_TRUE(decode(std::string("\x00\x13", 2), 1).Is(StatusCode::kCorruption));  // exponent 19
  EXPECT_TRUE(decode(std::string("\x02", 1), 1).Is(StatusCode::kCorruption));      // unknown mode
  // XOR: "1, 0" (reuse the window) before any window was set.
  std::string no_window(1, '\x01');
  PutFixed64(&no_window, std::bit_cast<uint64_t>(1.0));
  no_window.push_back('\x01');
  EXPECT_TRUE(decode(no_window, 2).Is(StatusCode::kCorruption));
  // Exception beyond the values.
  std::string far_exception("\x00\x00\x00\x01\x00\x01\x01\x05", 8);
  PutFixed64(&far_exception, std::bit_cast<uint64_t>(1.5));
  EXPECT_TRUE(decode(far_exception, 1).Is(StatusCode::kCorruption));
}

}  // namespace
}  // namespace cairn::chunk_coding
