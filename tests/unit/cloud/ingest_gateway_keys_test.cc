#include <string>

#include <gtest/gtest.h>

#include "cairn/ingest/gateway_keys.h"

#include "test_dirs.h"

namespace cairn {
namespace {

constexpr char kHexKey[] = "000102030405060708090a0b0c0d0e0f";

TEST(GatewayKeysTest, ParsesKeysCommentsAndBlankLines) {
  const std::string text = std::string("# keys of site 3\n\ngw-1 ") + kHexKey +
                           "\n  \t# indented comment\ngw-2\t" +
                           "FFEEDDCCBBAA99887766554433221100ffeeddccbbaa99887766554433221100\r\n";
  Result<GatewayKeys> keys = ParseGatewayKeys(text, "keys.txt");
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  ASSERT_EQ(keys->size(), 2u);
  std::string expected_one;
  for (int i = 0; i < 16; ++i) expected_one.push_back(static_cast<char>(i));
  EXPECT_EQ(keys->at("gw-1"), expected_one);
  const std::string& two = keys->at("gw-2");
  ASSERT_EQ(two.size(), 32u);
  EXPECT_EQ(static_cast<unsigned char>(two[0]), 0xFF);
  EXPECT_EQ(static_cast<unsigned char>(two[15]), 0x00);
  EXPECT_EQ(static_cast<unsigned char>(two[16]), 0xFF);
}

struct BadLine {
  std::string text;
  std::string expected_message_part;
};

TEST(GatewayKeysTest, RejectsBadLinesNamingTheLine) {
  const std::string good = std::string("gw-1 ") + kHexKey + "\n";
  const BadLine cases[] = {
      {good + "gw-2\n", "line 2: gateway 'gw-2' has no key"},
      {good + "gw-2 " + kHexKey + " extra\n", "line 2: expected '<gateway_id> <key as hex>', found 3 words"},
      {good + "# c\ngw-2 0001020304050607\n",
       "line 3: the key of gateway 'gw-2' has 16 hex digits; at least 32"},
      {good + "gw-2 " + kHexKey + "0\n", "line 2: the key of gateway 'gw-2' has an odd number of hex digits"},
      {good + "gw-2 000102030405060708090a0b0c0d0e0g\n",
       "line 2: the key of gateway 'gw-2' is not hexadecimal"},
      {good + "gw-1 " + kHexKey + "\n", "line 2: gateway 'gw-1' is listed twice"},
      {"gw/1 " + std::string(kHexKey) + "\n", "line 1: "},
      {"gw+1 " + std::string(kHexKey) + "\n", "line 1: "},
  };
  for (const BadLine& bad : cases) {
    Result<GatewayKeys> keys = ParseGatewayKeys(bad.text, "keys.txt");
    ASSERT_FALSE(keys.ok()) << bad.text;
    EXPECT_EQ(keys.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(keys.status().message().find("keys.txt " + bad.expected_message_part), std::string::npos)
        << keys.status().message();
  }
}

TEST(GatewayKeysTest, LoadsFileAndRefusesMissingOrEmptyFiles) {
  ScopedTempDir dir;
  Env* env = Env::Default();
  const std::string path = dir.path() + "/keys";
  ASSERT_TRUE(env->WriteFileAtomically(path, std::string("gw-9 ") + kHexKey + "\n").ok());
  Result<GatewayKeys> keys = LoadGatewayKeys(env, path);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(keys->count("gw-9"), 1u);

  Result<GatewayKeys> missing = LoadGatewayKeys(env, dir.path() + "/absent");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);

  ASSERT_TRUE(env->WriteFileAtomically(path, "# nothing yet\n").ok());
  Result<GatewayKeys> empty = LoadGatewayKeys(env, path);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("lists no gateway"), std::string::npos);
}

}  // namespace
}  // namespace cairn
