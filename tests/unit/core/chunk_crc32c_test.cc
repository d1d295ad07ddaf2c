#include <string>

#include <gtest/gtest.h>

#include "chunk/crc32c.h"

namespace cairn {
namespace {

TEST(Crc32cTest, MatchesKnownVectors) {
  EXPECT_EQ(Crc32c(""), 0u);
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c("a"), 0xC1D04330u);
  // RFC 3720 (iSCSI) appendix B.4 test patterns.
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xFF')), 0x62A8AB43u);
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  EXPECT_EQ(Crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(descending), 0x113FDB5Cu);
}

TEST(Crc32cTest, ExtendEqualsWholeAtEverySplit) {
  std::string data;
  for (int i = 0; i < 100; ++i) data.push_back(static_cast<char>(i * 37 + 11));
  const uint32_t whole = Crc32c(data);
  for (size_t split = 0; split <= data.size(); ++split) {
    std::string_view view(data);
    EXPECT_EQ(Crc32cExtend(Crc32c(view.substr(0, split)), view.substr(split)), whole) << "split " << split;
  }
}

TEST(Crc32cTest, IndependentOfAlignment) {
  std::string buffer(64 + 8, 'x');
  const std::string text = "The quick brown fox jumps over the lazy dog 0123456789";
  const uint32_t expected = Crc32c(text);
  for (size_t offset = 0; offset < 8; ++offset) {
    buffer.replace(offset, text.size(), text);
    EXPECT_EQ(Crc32c(std::string_view(buffer).substr(offset, text.size())), expected) << "offset " << offset;
  }
}

TEST(Crc32cTest, DetectsEverySingleBitFlip) {
  std::string data = "sensor-17 temperature=21.53 1700000000000";
  const uint32_t original = Crc32c(data);
  for (size_t byte = 0; byte < data.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      data[byte] = static_cast<char>(data[byte] ^ (1 << bit));
      EXPECT_NE(Crc32c(data), original);
      data[byte] = static_cast<char>(data[byte] ^ (1 << bit));
    }
  }
}

}  // namespace
}  // namespace cairn
