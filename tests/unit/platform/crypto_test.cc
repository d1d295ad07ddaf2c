// SHA-256 and HMAC-SHA256 against published test vectors, and the
// constant-time comparison.
#include "cairn/platform/crypto.h"

#include <string>

#include <gtest/gtest.h>

namespace cairn {
namespace {

std::string Hex(const Sha256Digest& digest) {
  static const char kDigits[] = "0123456789abcdef";
  std::string text;
  for (uint8_t byte : digest) {
    text += kDigits[byte >> 4];
    text += kDigits[byte & 15];
  }
  return text;
}

TEST(CryptoTest, Sha256MatchesFips180Vectors) {
  EXPECT_EQ(Hex(Sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Hex(Sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hex(Sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(CryptoTest, HmacSha256MatchesRfc4231Vectors) {
  // Test case 1: 20 bytes of 0x0b, "Hi There".
  EXPECT_EQ(Hex(HmacSha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // Test case 2: key "Jefe".
  EXPECT_EQ(Hex(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 6: a key longer than the block size is hashed first.
  EXPECT_EQ(
      Hex(HmacSha256(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First")),
      "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(CryptoTest, ConstantTimeEqualComparesWholeContents) {
  const Sha256Digest a = Sha256("a");
  Sha256Digest b = a;
  EXPECT_TRUE(ConstantTimeEqual(a, b));
  b[31] ^= 1;
  EXPECT_FALSE(ConstantTimeEqual(a, b));
  b = a;
  b[0] ^= 0x80;
  EXPECT_FALSE(ConstantTimeEqual(a, b));
  EXPECT_FALSE(ConstantTimeEqual(std::span<const uint8_t>(a).first(31), b));
  EXPECT_TRUE(ConstantTimeEqual(std::span<const uint8_t>(), std::span<const uint8_t>()));
}

}  // namespace
}  // namespace cairn
