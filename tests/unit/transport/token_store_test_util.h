// Shared helpers of the token store tests: Envs whose randomness is known or
// fails, text checks, and the fixture that opens a store in a fresh directory.
#pragma once

#include <atomic>
#include <cctype>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/http/token_store.h"
#include "cairn/platform/crypto.h"
#include "cairn/platform/env.h"
#include "cairn/util/hex.h"

#include "fault_injection_env.h"
#include "test_dirs.h"

namespace cairn::token_testing {

// Hands out the bytes 0, 1, 2, ... so that token texts are known in advance.
class CountingRandomEnv : public EnvWrapper {
 public:
  explicit CountingRandomEnv(Env* target) : EnvWrapper(target) {}
  Status RandomBytes(std::span<uint8_t> out) override {
    for (uint8_t& byte : out) byte = next_++;
    return Status::Ok();
  }

 private:
  uint8_t next_ = 0;
};

class FailingRandomEnv : public EnvWrapper {
 public:
  explicit FailingRandomEnv(Env* target) : EnvWrapper(target) {}
  Status RandomBytes(std::span<uint8_t>) override { return Status::IOError("getrandom: no entropy"); }
};

inline bool IsLowerHexText(std::string_view text) {
  return text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

inline bool IsBase64UrlText(std::string_view text) {
  return text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
         std::string_view::npos;
}

inline std::vector<std::string> Names(const std::vector<TokenInfo>& infos) {
  std::vector<std::string> names;
  for (const TokenInfo& info : infos) names.push_back(info.name);
  return names;
}

class TokenStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<TokenStore> OpenStore(Env* env = Env::Default()) {
    Result<std::unique_ptr<TokenStore>> store = TokenStore::Open(env, dir_.path());
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  CreatedToken MustCreate(TokenStore* store, const std::string& name, std::vector<std::string> scopes) {
    Result<CreatedToken> created = store->Create(name, std::move(scopes));
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? std::move(created).value() : CreatedToken{};
  }

  std::string FileBytes() {
    Result<std::string> bytes = Env::Default()->ReadFileToString(dir_.PathOf("tokens"));
    EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
    return bytes.ok() ? *bytes : "";
  }

  void WriteFile(std::string_view bytes) {
    ASSERT_TRUE(Env::Default()->WriteFileAtomically(dir_.PathOf("tokens"), bytes).ok());
  }

  static void ExpectInvalidToken(const TokenStore& store, std::string_view presented) {
    Result<TokenInfo> info = store.Authenticate(presented);
    ASSERT_FALSE(info.ok()) << "accepted: " << presented;
    EXPECT_EQ(info.status().code(), StatusCode::kPermissionDenied);
    EXPECT_EQ(info.status().message(), "invalid token");
  }

  ScopedTempDir dir_{"cairn-tokens"};
};

}  // namespace cairn::token_testing
