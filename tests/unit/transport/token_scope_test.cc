// Token scopes (parsing, what each allows) and the token a request presents
// in its Authorization header.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/http/token_store.h"

#include "token_store_test_util.h"

namespace cairn::token_testing {
namespace {

// ---- scopes -------------------------------------------------------------------

TEST(TokenScopeTest, ParseAndPrintRoundTrip) {
  for (const std::string text :
       {"admin", "read:sensors", "write:sensors", "read:*", "write:*", "read:A_b-9"}) {
    Result<TokenScope> scope = ParseTokenScope(text);
    ASSERT_TRUE(scope.ok()) << text << ": " << scope.status().ToString();
    EXPECT_EQ(scope->ToString(), text);
  }
  EXPECT_EQ(ParseTokenScope("admin")->access, Access::kAdmin);
  EXPECT_EQ(ParseTokenScope("read:t")->access, Access::kRead);
  EXPECT_EQ(ParseTokenScope("read:t")->table, "t");
  EXPECT_EQ(ParseTokenScope("write:t")->access, Access::kWrite);
  Result<TokenScope> bad = ParseTokenScope("read:bad table");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("read:bad table"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(ParseTokenScope("read:" + std::string(65, 't')).ok());
}

TokenInfo WithScopes(std::vector<std::string> texts) {
  TokenInfo info;
  for (const std::string& text : texts) info.scopes.push_back(*ParseTokenScope(text));
  return info;
}

TEST(TokenScopeTest, AdminAllowsEverything) {
  const TokenInfo admin = WithScopes({"admin"});
  EXPECT_TRUE(admin.Allows(Access::kAdmin, ""));
  EXPECT_TRUE(admin.Allows(Access::kRead, "sensors"));
  EXPECT_TRUE(admin.Allows(Access::kWrite, "sensors"));
  EXPECT_TRUE(admin.Allows(Access::kWrite, "any-other"));
}

TEST(TokenScopeTest, ReadAndWriteAreSeparateAndPerTable) {
  const TokenInfo reader = WithScopes({"read:sensors"});
  EXPECT_TRUE(reader.Allows(Access::kRead, "sensors"));
  EXPECT_FALSE(reader.Allows(Access::kWrite, "sensors"));
  EXPECT_FALSE(reader.Allows(Access::kRead, "other"));
  EXPECT_FALSE(reader.Allows(Access::kRead, "Sensors")) << "table names are case-sensitive";
  EXPECT_FALSE(reader.Allows(Access::kRead, "sensors2"));
  EXPECT_FALSE(reader.Allows(Access::kAdmin, "sensors"));

  const TokenInfo writer = WithScopes({"write:sensors"});
  EXPECT_TRUE(writer.Allows(Access::kWrite, "sensors"));
  EXPECT_FALSE(writer.Allows(Access::kRead, "sensors")) << "write does not include read";
  EXPECT_FALSE(writer.Allows(Access::kWrite, "other"));
  EXPECT_FALSE(writer.Allows(Access::kAdmin, ""));

  const TokenInfo both = WithScopes({"read:a", "write:b"});
  EXPECT_TRUE(both.Allows(Access::kRead, "a"));
  EXPECT_FALSE(both.Allows(Access::kWrite, "a"));
  EXPECT_TRUE(both.Allows(Access::kWrite, "b"));
  EXPECT_FALSE(both.Allows(Access::kRead, "b"));
}

TEST(TokenScopeTest, WildcardCoversEveryTableButNotAdmin) {
  const TokenInfo all_reader = WithScopes({"read:*"});
  EXPECT_TRUE(all_reader.Allows(Access::kRead, "sensors"));
  EXPECT_TRUE(all_reader.Allows(Access::kRead, "created-later"));
  EXPECT_FALSE(all_reader.Allows(Access::kWrite, "sensors"));
  EXPECT_FALSE(all_reader.Allows(Access::kAdmin, ""));

  const TokenInfo all_writer = WithScopes({"write:*"});
  EXPECT_TRUE(all_writer.Allows(Access::kWrite, "x"));
  EXPECT_FALSE(all_writer.Allows(Access::kRead, "x"));
  EXPECT_FALSE(all_writer.Allows(Access::kAdmin, "x"));

  EXPECT_FALSE(TokenInfo{}.Allows(Access::kRead, "x")) << "no scope, no access";
}

// ---- Authorization header -----------------------------------------------------

std::string Extracted(std::string_view header) {
  Result<std::string> token = ExtractPresentedToken(header);
  EXPECT_TRUE(token.ok()) << "'" << header << "': " << token.status().ToString();
  return token.ok() ? *token : "<error>";
}

TEST(ExtractPresentedTokenTest, BearerAndTokenSchemesInAnyCase) {
  EXPECT_EQ(Extracted("Bearer cairn_abc"), "cairn_abc");
  EXPECT_EQ(Extracted("bearer cairn_abc"), "cairn_abc");
  EXPECT_EQ(Extracted("BEARER cairn_abc"), "cairn_abc");
  EXPECT_EQ(Extracted("Token cairn_abc"), "cairn_abc");
  EXPECT_EQ(Extracted("tOKEN cairn_abc"), "cairn_abc");
  EXPECT_EQ(Extracted("  Bearer \t  cairn_abc \t"), "cairn_abc");
  EXPECT_EQ(Extracted("Bearer\tcairn_abc"), "cairn_abc");
}

TEST(ExtractPresentedTokenTest, BasicPasswordIsTheToken) {
  EXPECT_EQ(Extracted("Basic dXNlcjp0b2s="), "tok");                    // user:tok
  EXPECT_EQ(Extracted("basic aW5mbHV4OmNhaXJuX3g6eQ=="), "cairn_x:y");  // influx:cairn_x:y
  EXPECT_EQ(Extracted("Basic OmFiYw=="), "abc");                        // :abc
  EXPECT_EQ(Extracted("Basic dTpwMQ=="), "p1");                         // u:p1
  EXPECT_EQ(Extracted("Basic dTpwMQ"), "p1") << "padding is optional";
}

void ExpectMalformed(std::string_view header, std::string_view message_part) {
  Result<std::string> token = ExtractPresentedToken(header);
  ASSERT_FALSE(token.ok()) << "'" << header << "' gave '" << *token << "'";
  EXPECT_EQ(token.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(token.status().message().find(message_part), std::string::npos)
      << "'" << header << "': " << token.status().message();
}

TEST(ExtractPresentedTokenTest, MalformedHeadersAreInvalidArgument) {
  ExpectMalformed("", "empty");
  ExpectMalformed(" \t ", "empty");
  ExpectMalformed("Bearer", "no credentials");
  ExpectMalformed("Bearer   ", "no credentials");
  ExpectMalformed("Basic", "no credentials");
  ExpectMalformed("cairn_abc", "unsupported authorization scheme");
  ExpectMalformed("Digest username=x", "unsupported authorization scheme 'Digest'");
  ExpectMalformed("Bearer a b", "space");
  ExpectMalformed("Basic !!!!", "base64");
  ExpectMalformed("Basic dXNlc", "base64");                // a length no encoding produces
  ExpectMalformed("Basic dXNlcjp0b2s==", "base64");        // wrong padding
  ExpectMalformed("Basic dXNl=cjp0", "base64");            // padding inside
  ExpectMalformed("Basic dXNlcjp0b2s===", "base64");       // too much padding
  ExpectMalformed("Basic dXNlcjp0b2s-", "base64");         // base64url is not Basic's alphabet
  ExpectMalformed("Basic anVzdHVzZXI=", "user:password");  // justuser
  ExpectMalformed("Basic dXNlcjo=", "empty password");     // user:
}

}  // namespace
}  // namespace cairn::token_testing
