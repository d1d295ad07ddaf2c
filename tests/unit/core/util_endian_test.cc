#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "cairn/util/endian.h"

namespace cairn::util {
namespace {

TEST(EndianTest, WritesLeastSignificantByteFirst) {
  std::string out;
  PutFixed32(&out, 0x04030201u);
  PutFixed64(&out, 0x0807060504030201ull);
  PutLittleEndian(&out, 0xBBAA, 2);
  EXPECT_EQ(out, std::string("\x01\x02\x03\x04\x01\x02\x03\x04\x05\x06\x07\x08\xAA\xBB", 14));
}

TEST(EndianTest, RoundTripsExtremesAtAnyAlignment) {
  for (uint64_t value : {uint64_t{0}, uint64_t{1}, uint64_t{0x80}, uint64_t{0xFFFFFFFF}, uint64_t{1} << 63,
                         ~uint64_t{0}, uint64_t{0x0123456789ABCDEF}}) {
    std::string out = "x";  // an odd offset: reads need no alignment
    PutFixed64(&out, value);
    PutFixed32(&out, static_cast<uint32_t>(value));
    EXPECT_EQ(DecodeFixed64(out.data() + 1), value);
    EXPECT_EQ(DecodeFixed32(out.data() + 9), static_cast<uint32_t>(value));
    EXPECT_EQ(LoadLittleEndian(out.data() + 1, 8), value);
    EXPECT_EQ(LoadLittleEndian(out.data() + 1, 2), value & 0xFFFF);
  }
}

TEST(EndianTest, PartialWidthsKeepOnlyTheLowBytes) {
  std::string out;
  PutLittleEndian(&out, 0x1122334455667788ull, 3);
  EXPECT_EQ(out, "\x88\x77\x66");
  EXPECT_EQ(LoadLittleEndian(out.data(), 3), 0x667788u);
  EXPECT_EQ(LoadLittleEndian("\xFF\xFF", 0), 0u);
}

}  // namespace
}  // namespace cairn::util
